import fs from 'node:fs';
import path from 'node:path';
import { WorkspacePathError } from './workspace-path-error.ts';

/** A file or directory the workspace opened for a call (workspace.ts), by descriptor. */
export interface OpenedFile {
  fd: number;
  /** Where the descriptor points (an absolute path inside the workspace). */
  realPath: string;
  /** The workspace-relative path, with '/' separators. */
  relative: string;
  stat: fs.Stats;
}

export const PROC_FD = '/proc/self/fd';
/** Linux: a name is looked up through its directory's descriptor (see workspace.ts). */
export const hasProcFd = process.platform === 'linux' && fs.existsSync(PROC_FD);
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
export const DIRECTORY_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/**
 * The directories walked so far, each held open, from the workspace root down, and what this
 * call created (so a refused call can remove it). Names are looked up only through `at()`.
 */
export class DescriptorWalk {
  private readonly stack: Array<{ fd: number; name: string }>;
  private readonly opened: number[] = [];
  private readonly made: Array<{ dir: { fd: number; path: string }; name: string; directory: boolean }> = [];
  private kept: number | undefined;
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
    const fd = tryOpen(root, DIRECTORY_FLAGS);
    if (typeof fd !== 'number') {
      throw new WorkspacePathError(`Cannot open the workspace directory ${root} (${fd}).`, 'Check that the workspace exists.');
    }
    this.opened.push(fd);
    this.stack = [{ fd, name: '' }];
  }

  private get top(): { fd: number; name: string } {
    return this.stack[this.stack.length - 1]!;
  }

  /** How `name` in the current (or a given) directory is reached: through its descriptor on Linux. */
  at(name: string, dir?: { fd: number; path: string }): string {
    if (hasProcFd) return `${PROC_FD}/${dir?.fd ?? this.top.fd}/${name}`;
    return path.join(dir?.path ?? this.pathOf(), name);
  }

  /** The absolute path the walk believes it is at (what `at()` uses without /proc). */
  pathOf(name?: string): string {
    const names = this.stack.slice(1).map((entry) => entry.name);
    return path.join(this.root, ...names, ...(name === undefined ? [] : [name]));
  }

  /** The real path of `name` in the current directory (through its descriptor on Linux). */
  realPathOf(name?: string): string {
    const dir = hasProcFd ? fs.readlinkSync(`${PROC_FD}/${this.top.fd}`) : this.pathOf();
    return name === undefined ? dir : path.join(dir, name);
  }

  relative(name?: string): string {
    return [...this.stack.slice(1).map((entry) => entry.name), ...(name === undefined ? [] : [name])].join('/') || '.';
  }

  current(): number {
    return this.top.fd;
  }

  /** Closes `fd` with the walk unless the walk hands it to the caller (finish). */
  track(fd: number): void {
    this.opened.push(fd);
  }

  enter(fd: number, name: string): void {
    this.stack.push({ fd, name });
  }

  /** Back to the parent directory; false when already at the root. */
  up(): boolean {
    if (this.stack.length === 1) return false;
    this.stack.pop(); // its descriptor stays open until close(): something created below it may need removing
    return true;
  }

  toRoot(): void {
    this.stack.splice(1);
  }

  /** mkdir below the current directory; false when the name appeared meanwhile. */
  makeDirectory(name: string, input: string): boolean {
    try {
      fs.mkdirSync(this.at(name));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
      throw new WorkspacePathError(`Cannot create directory "${this.relative(name)}" for "${input}" (${code}).`);
    }
  }

  created(name: string, directory: boolean): void {
    this.made.push({ dir: { fd: this.top.fd, path: this.pathOf() }, name, directory });
  }

  /** The call succeeded: its descriptor is the caller's, and what it created stays. */
  finish(file: OpenedFile): OpenedFile {
    this.kept = file.fd;
    this.made.length = 0;
    return file;
  }

  /** Removes, newest first and by name below the same descriptors, what this call created. */
  removeCreated(): void {
    for (const entry of this.made.splice(0).reverse()) {
      try {
        const where = this.at(entry.name, entry.dir);
        if (entry.directory) fs.rmdirSync(where);
        else if (isEmptyFile(where)) fs.unlinkSync(where);
      } catch {
        // Already gone, or no longer empty: then it is not only this call's any more.
      }
    }
  }

  close(): void {
    for (const fd of this.opened.splice(0)) if (fd !== this.kept) fs.closeSync(fd);
  }
}

/** fs.openSync that returns the errno code instead of throwing it. */
export function tryOpen(where: string, flags: number, mode?: number): number | string {
  try {
    return fs.openSync(where, flags, mode);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'EIO';
  }
}

/** Whether `where` is a regular file with nothing in it (what a write's open creates, before any content). */
function isEmptyFile(where: string): boolean {
  const stat = fs.lstatSync(where);
  return stat.isFile() && stat.size === 0;
}
