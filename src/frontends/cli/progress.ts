/**
 * A one-line progress indicator on stderr for long operations. It draws only when stderr is a
 * terminal, so logs, pipes and CI stay clean; `done()` erases it.
 */
export interface Progress {
  update(text: string): void;
  done(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function createProgress(stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  let text = '';
  let frame = 0;
  const draw = () => stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
  const timer = setInterval(draw, 100);
  timer.unref();
  return {
    update(next) {
      text = next;
      draw();
    },
    done() {
      clearInterval(timer);
      stream.write('\r\x1b[2K');
    },
  };
}
