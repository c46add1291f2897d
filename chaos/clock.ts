// A worker's wall clock, moved at will: libfaketime (Debian's `faketime` package) preloaded into
// the worker reads the offset from a file, so the fault can step the clock forward and back while
// the worker runs. Only the wall clock moves (Date, timestamps); the monotonic clock that Node's
// timers run on does not, just as when NTP steps a host's clock or a VM resumes.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where Debian puts the library, per architecture; undefined when it is not installed. */
export function findFaketime(): string | undefined {
  const lib = '/usr/lib';
  const candidates = [join(lib, 'faketime', 'libfaketime.so.1'), ...(existsSync(lib) ? readdirSync(lib).map((arch) => join(lib, arch, 'faketime', 'libfaketime.so.1')) : [])];
  return candidates.find((path) => existsSync(path));
}

export interface MovableClock {
  /** What the process's environment needs for its clock to follow `set`. */
  env: Record<string, string>;
  /** Sets the clock this far from the true time (seconds; 0 puts it right). */
  set(offsetSeconds: number): void;
}

export function movableClock(library: string, file: string): MovableClock {
  const set = (offsetSeconds: number) => writeFileSync(file, `${offsetSeconds >= 0 ? '+' : ''}${Math.round(offsetSeconds)}s\n`);
  set(0);
  return {
    env: {
      LD_PRELOAD: library,
      FAKETIME_TIMESTAMP_FILE: file,
      // The file is read again at most every second, not on every clock read.
      FAKETIME_CACHE_DURATION: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    set,
  };
}
