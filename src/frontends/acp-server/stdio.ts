import { Readable } from 'node:stream';

/**
 * stdout belongs to the ACP JSON-RPC stream alone. This takes the real stdout for the
 * protocol and sends anything else that writes to it (console.log in a library, a stray
 * process.stdout.write) to stderr, so a client never reads a line that is not JSON-RPC.
 */
export interface AcpStdio {
  input: ReadableStream<Uint8Array>;
  output: WritableStream<Uint8Array>;
  /** Puts stdout and console back as they were. */
  restore(): void;
}

export function takeStdio(): AcpStdio {
  const stdout = process.stdout;
  const realWrite = stdout.write.bind(stdout) as (chunk: Uint8Array, callback: (error?: Error | null) => void) => boolean;
  const toStderr = ((chunk: unknown, encoding?: unknown, callback?: unknown) =>
    (process.stderr.write as (...args: unknown[]) => boolean)(chunk, encoding, callback)) as typeof stdout.write;
  const saved = { write: stdout.write, log: console.log, info: console.info, debug: console.debug };
  stdout.write = toStderr;
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;

  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      return new Promise<void>((resolve, reject) => {
        realWrite(chunk, (error) => (error ? reject(error) : resolve()));
      });
    },
  });
  // A client that goes away closes the pipe; that ends the session, it is not a crash.
  stdout.on('error', () => {});
  return {
    input: Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    output,
    restore() {
      stdout.write = saved.write;
      console.log = saved.log;
      console.info = saved.info;
      console.debug = saved.debug;
    },
  };
}
