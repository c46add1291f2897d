import fs from 'node:fs';
import path from 'node:path';
import { AcxError } from '../../util/errors.ts';
import { resolveWorkspace } from './environment.ts';

/**
 * Opens files strictly inside a workspace directory, for paths chosen by the model. A path must
 * be relative and free of `..`; its real path (symlinks resolved) must lie inside the workspace;
 * the final component is opened with O_NOFOLLOW, and the opened descriptor is checked again
 * through /proc/self/fd, so a symlink swapped in between the check and the open (at any level)
 * is caught after the open and nothing is read or written through it.
 */
export class WorkspacePathError extends AcxError {
  constructor(message: string, hint = 'Use a relative path inside the workspace, without "..".') {
    super('workspace-path', message, { hint });
    this.name = 'WorkspacePathError';
  }
}

export interface WorkspaceHooks {
  /** Test seam: runs after the path checks and before the open (to simulate a race). */
  afterCheck?: (realPath: string) => void;
}

export interface OpenedFile {
  fd: number;
  realPath: string;
  /** The workspace-relative path, with '/' separators. */
  relative: string;
  stat: fs.Stats;
}

const PROC_FD = '/proc/self/fd';
const hasProcFd = process.platform === 'linux' && fs.existsSync(PROC_FD);

export class Workspace {
  private readonly rootInput: string;
  private resolvedRoot: string | undefined;
  private readonly hooks: WorkspaceHooks;

  constructor(root: string, hooks: WorkspaceHooks = {}) {
    this.rootInput = root;
    this.hooks = hooks;
  }

  /** The workspace's real path, resolved on first use (describing tools must not need it to exist). */
  get root(): string {
    return (this.resolvedRoot ??= resolveWorkspace(this.rootInput));
  }

  /** Splits a model-supplied path into segments, refusing absolute paths, `..` and NUL. */
  segments(input: string): string[] {
    if (typeof input !== 'string') throw new WorkspacePathError('The path must be a string.');
    if (input.includes('\0')) throw new WorkspacePathError('The path contains a NUL byte.');
    if (path.isAbsolute(input) || /^[A-Za-z]:[\\/]/.test(input) || input.startsWith('\\')) {
      throw new WorkspacePathError(`"${input}" is an absolute path; only paths relative to the workspace are allowed.`);
    }
    const parts = input.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
    if (parts.includes('..')) throw new WorkspacePathError(`"${input}" contains "..", which could leave the workspace.`);
    return parts;
  }

  isInside(candidate: string): boolean {
    return candidate === this.root || candidate.startsWith(this.root + path.sep);
  }

  relative(realPath: string): string {
    return path.relative(this.root, realPath).split(path.sep).join('/') || '.';
  }

  /** The real path of an existing entry, refused when it resolves outside the workspace. */
  realpathInside(input: string): string {
    const target = path.join(this.root, ...this.segments(input));
    let real: string;
    try {
      real = fs.realpathSync(target);
    } catch {
      if (isSymlink(target)) throw escapeError(input);
      throw notFound(input);
    }
    if (!this.isInside(real)) throw escapeError(input);
    return real;
  }

  openRead(input: string): OpenedFile {
    const real = this.realpathInside(input);
    this.hooks.afterCheck?.(real);
    // O_NONBLOCK so a FIFO cannot hang the call; it is refused below as not a regular file.
    const fd = this.openVerified(input, real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      fs.closeSync(fd);
      throw new WorkspacePathError(
        `"${input}" is not a regular file.`,
        stat.isDirectory() ? 'List a directory with fs_list.' : 'Only regular files can be read.',
      );
    }
    return { fd, realPath: real, relative: this.relative(real), stat };
  }

  openDirectory(input: string): OpenedFile {
    const real = this.realpathInside(input);
    this.hooks.afterCheck?.(real);
    const fd = this.openVerified(input, real, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
    return { fd, realPath: real, relative: this.relative(real), stat: fs.fstatSync(fd) };
  }

  /** Opens (creating it and missing parent directories) a regular file for writing, not truncated. */
  openWrite(input: string): OpenedFile {
    const parts = this.segments(input);
    const name = parts.pop();
    if (!name) throw new WorkspacePathError('A file path is required.');
    let dir = this.root;
    for (const part of parts) dir = this.enterOrCreateDirectory(dir, part, input);
    let target = path.join(dir, name);
    if (isSymlink(target)) {
      // A symlink that stays inside the workspace is followed to its target; any other is refused.
      let real: string;
      try {
        real = fs.realpathSync(target);
      } catch {
        throw escapeError(input);
      }
      if (!this.isInside(real)) throw escapeError(input);
      target = real;
    }
    this.hooks.afterCheck?.(target);
    const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
    const fd = this.openVerified(input, target, flags, 0o644);
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      fs.closeSync(fd);
      throw new WorkspacePathError(`"${input}" exists and is not a regular file.`, 'Write to a regular file path.');
    }
    return { fd, realPath: target, relative: this.relative(target), stat };
  }

  /** A path through which the opened descriptor's directory can be read (Linux: the fd itself). */
  descriptorPath(file: OpenedFile): string {
    return hasProcFd ? `${PROC_FD}/${file.fd}` : file.realPath;
  }

  private enterOrCreateDirectory(dir: string, part: string, input: string): string {
    const next = path.join(dir, part);
    let real: string;
    try {
      real = fs.realpathSync(next);
    } catch {
      if (isSymlink(next)) throw escapeError(input);
      try {
        fs.mkdirSync(next);
      } catch (error) {
        throw new WorkspacePathError(`Cannot create directory for "${input}": ${(error as Error).message}`);
      }
      real = fs.realpathSync(next);
    }
    if (!this.isInside(real)) throw escapeError(input);
    if (!fs.statSync(real).isDirectory()) {
      throw new WorkspacePathError(`"${this.relative(real)}" in "${input}" is not a directory.`);
    }
    return real;
  }

  private openVerified(input: string, real: string, flags: number, mode?: number): number {
    let fd: number;
    try {
      fd = fs.openSync(real, flags, mode);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw escapeError(input, 'it was replaced by a symlink');
      if (code === 'ENOENT') throw notFound(input);
      if (code === 'ENOTDIR') throw new WorkspacePathError(`"${input}" is not a directory.`, 'Read a file with fs_read.');
      throw new WorkspacePathError(`Cannot open "${input}": ${(error as Error).message}`);
    }
    const opened = this.openedPath(fd, real);
    if (opened === undefined || !this.isInside(opened)) {
      fs.closeSync(fd);
      throw escapeError(input, 'a path component was swapped for a symlink while it was being opened');
    }
    return fd;
  }

  /** Where the descriptor really points: /proc/self/fd on Linux, else a device/inode comparison. */
  private openedPath(fd: number, expected: string): string | undefined {
    if (hasProcFd) {
      try {
        return fs.readlinkSync(`${PROC_FD}/${fd}`);
      } catch {
        return undefined;
      }
    }
    try {
      const a = fs.fstatSync(fd);
      const b = fs.lstatSync(fs.realpathSync(expected));
      return a.dev === b.dev && a.ino === b.ino ? expected : undefined;
    } catch {
      return undefined;
    }
  }
}

function isSymlink(candidate: string): boolean {
  try {
    return fs.lstatSync(candidate).isSymbolicLink();
  } catch {
    return false;
  }
}

function escapeError(input: string, detail = 'it resolves outside the workspace through a symlink'): WorkspacePathError {
  return new WorkspacePathError(`Refused "${input}": ${detail}.`, 'Only files inside the workspace can be used.');
}

function notFound(input: string): WorkspacePathError {
  return new WorkspacePathError(`"${input}" does not exist in the workspace.`, 'List the directory with fs_list to see what exists.');
}
