import fs from 'node:fs';
import path from 'node:path';
import { DescriptorWalk, DIRECTORY_FLAGS, hasProcFd, type OpenedFile, PROC_FD, tryOpen } from './descriptor-walk.ts';
import { resolveWorkspace } from './environment.ts';
import { type GuardedDirectory, type ProtectedPath, protectedPathOf, protectedPathsIn } from './protected.ts';
import { WorkspacePathError } from './workspace-path-error.ts';

export { WorkspacePathError } from './workspace-path-error.ts';
export type { OpenedFile } from './descriptor-walk.ts';

export interface WorkspaceHooks {
  /**
   * Test seam: runs after each directory on a path has been opened, before the next name is
   * looked up in it, with that directory's workspace-relative path (to stage a swap right then).
   */
  afterEnter?: (directory: string) => void;
}

type Intent = 'read' | 'write' | 'directory' | 'make-directory';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
// O_NONBLOCK: a FIFO cannot hang the call (it is refused as not a regular file).
const FILE_FLAGS = { read: O_RDONLY | O_NOFOLLOW | O_NONBLOCK, write: O_WRONLY | O_NOFOLLOW | O_NONBLOCK };
const CREATE_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK;
/** The kernel's own limit on symlinks followed while resolving one path. */
const MAX_SYMLINKS = 40;
/** A name can change between two looks at it (a concurrent rename); look again this often. */
const MAX_RETRIES = 8;
/** Entries looked at when searching the workspace for the other names of a hard-linked file. */
const LINK_SEARCH_LIMIT = 100_000;

/**
 * Opens files strictly inside a workspace directory, for paths chosen by the model.
 *
 * A path must be relative and free of `..`. It is then walked one component at a time, each
 * opened with O_NOFOLLOW *relative to the descriptor of the directory before it*: on Linux the
 * next name is looked up through `/proc/self/fd/<dir>/<name>`, which resolves inside the very
 * directory that descriptor holds, wherever it has been moved since. No step resolves a path
 * string a concurrent rename could redirect, so swapping a directory for a symlink mid-call
 * (rename or RENAME_EXCHANGE) cannot send the walk outside. A symlink met on the way is read
 * and followed only while it stays inside. Files and directories are created only by name below
 * a verified descriptor (O_CREAT|O_EXCL|O_NOFOLLOW, mkdir), and what a refused call created is
 * removed again.
 *
 * Hard links are the other way out: a name in the workspace can share its inode with a file
 * outside. Writing refuses any file with more than one link; reading accepts one only when every
 * one of its names is found inside the workspace.
 *
 * Without /proc (not Linux) the walk resolves each step by path: every component is still
 * opened with O_NOFOLLOW, but a concurrent swap of a directory already walked is not caught.
 *
 * Writing never reaches a guarded directory (the agent directory, the config home: see
 * protected.ts): the real path of everything a write would create or open is checked first.
 */
export class Workspace {
  private readonly rootInput: string;
  private resolvedRoot: string | undefined;
  private readonly hooks: WorkspaceHooks;
  private readonly guarded: readonly GuardedDirectory[];

  /** `guarded`: the folders acx loads code and configuration from; nothing is written in them. */
  constructor(root: string, hooks: WorkspaceHooks = {}, guarded: readonly GuardedDirectory[] = []) {
    this.rootInput = root;
    this.hooks = hooks;
    this.guarded = guarded;
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

  /** Opens an existing regular file for reading. */
  openRead(input: string): OpenedFile {
    return this.open(input, 'read');
  }

  /** Opens an existing directory (list it through `descriptorPath`). */
  openDirectory(input: string): OpenedFile {
    return this.open(input, 'directory');
  }

  /** Opens (creating it and missing parent directories) a regular file for writing, not truncated. */
  openWrite(input: string): OpenedFile {
    return this.open(input, 'write');
  }

  /** Opens a directory, creating it and missing parents first. */
  makeDirectory(input: string): OpenedFile {
    return this.open(input, 'make-directory');
  }

  /**
   * For content written elsewhere (an editor's buffer): opens the file as openWrite does, then
   * runs `fill` with it. When `fill` fails, what the open created is removed again (the new file
   * while it is still empty, then the directories made for it), by name below the directories
   * walked, which stay open until then. The file's descriptor is closed when `fill` settles.
   */
  async openWriteThen<T>(input: string, fill: (file: OpenedFile) => Promise<T>): Promise<T> {
    const walk = new DescriptorWalk(this.root);
    try {
      return await fill(this.walkTo(input, 'write', walk));
    } catch (error) {
      walk.removeCreated();
      throw error;
    } finally {
      walk.close();
    }
  }

  /** A path through which the opened descriptor's directory can be read (Linux: the fd itself). */
  descriptorPath(file: OpenedFile): string {
    return hasProcFd ? `${PROC_FD}/${file.fd}` : file.realPath;
  }

  private open(input: string, intent: Intent): OpenedFile {
    const walk = new DescriptorWalk(this.root);
    try {
      return walk.finish(this.walkTo(input, intent, walk));
    } catch (error) {
      walk.removeCreated();
      throw error;
    } finally {
      walk.close();
    }
  }

  /** Walks to what `input` names, creating what a write needs; the caller finishes or undoes the walk. */
  private walkTo(input: string, intent: Intent, walk: DescriptorWalk): OpenedFile {
    const pending = this.segments(input);
    const directory = intent === 'directory' || intent === 'make-directory';
    const creates = intent === 'write' || intent === 'make-directory';
    if (!directory && pending.length === 0) throw new WorkspacePathError('A file path is required.');
    // Computed per call: a guarded folder may have appeared (or moved) since the last one.
    const guard = creates ? protectedPathsIn(this.guarded, [this.root]) : [];
    const refuseGuarded = (realPath: string) => {
      const hit = protectedPathOf(realPath, guard);
      if (hit) throw guardedError(input, hit);
    };
    let symlinks = 0;
    let retries = 0;
    for (;;) {
      const name = pending.shift();
      if (name === undefined) {
        // Only a directory walk (or a symlink chain ending at a directory) runs out of names.
        if (!directory) throw notRegular(input, intent, true);
        return this.verify(input, walk.current(), intent, walk.pathOf());
      }
      if (name === '..') {
        // Only a followed symlink's target brings `..`; above the root is outside.
        if (!walk.up()) throw escapeError(input);
        continue;
      }
      const final = pending.length === 0 && !directory;
      const where = walk.at(name);
      if (final && intent === 'write') refuseGuarded(walk.realPathOf(name));
      const opened = tryOpen(where, final ? FILE_FLAGS[intent as 'read' | 'write'] : DIRECTORY_FLAGS);
      if (typeof opened === 'number') {
        retries = 0;
        walk.track(opened);
        if (final) {
          const file = this.verify(input, opened, intent, walk.pathOf(name));
          // What was opened, wherever a concurrent rename put it.
          if (intent === 'write') refuseGuarded(file.realPath);
          return file;
        }
        walk.enter(opened, name);
        this.hooks.afterEnter?.(walk.relative());
        continue;
      }
      const target = readSymlink(where);
      if (target !== undefined) {
        // Followed by walking its target from here (or from the root), never by path.
        if (++symlinks > MAX_SYMLINKS) throw new WorkspacePathError(`"${input}" goes through too many symlinks.`);
        pending.unshift(...this.symlinkTarget(input, target, walk));
        continue;
      }
      // ENOTDIR is final only for a name that is neither a directory nor a symlink by now.
      const changed = opened === 'ELOOP' || opened === 'EEXIST' || (opened === 'ENOTDIR' && !isPlainEntry(where));
      if (opened === 'ENOENT' && creates) {
        refuseGuarded(walk.realPathOf(name));
        if (final) {
          const created = tryOpen(where, CREATE_FLAGS, 0o644);
          if (typeof created === 'number') {
            walk.track(created);
            walk.created(name, false);
            return this.verify(input, created, intent, walk.pathOf(name));
          }
        } else if (walk.makeDirectory(name, input)) {
          walk.created(name, true);
        }
      } else if (!changed) {
        throw openFailure(input, intent, opened, walk.relative(name), pending.length === 0);
      }
      // Look again at what is there now: what this call made, or what raced it there.
      if (++retries > MAX_RETRIES) throw new WorkspacePathError(`"${input}" kept changing while it was being opened; try again.`);
      pending.unshift(name);
    }
  }

  /** The components to walk for a symlink's target; an absolute target must point into the workspace. */
  private symlinkTarget(input: string, target: string, walk: DescriptorWalk): string[] {
    let rest = target;
    if (path.isAbsolute(target)) {
      const base = [this.root, path.resolve(this.rootInput)].find((root) => target === root || target.startsWith(root + path.sep));
      if (base === undefined) throw escapeError(input);
      rest = target.slice(base.length);
      walk.toRoot();
    }
    return rest.split('/').filter((part) => part !== '' && part !== '.');
  }

  /** Checks what was opened: still inside, the right type, and no hard link leading outside. */
  private verify(input: string, fd: number, intent: Intent, walkedPath: string): OpenedFile {
    const realPath = hasProcFd ? fs.readlinkSync(`${PROC_FD}/${fd}`) : walkedPath;
    if (!this.isInside(realPath)) {
      throw escapeError(input, 'a directory on its path was moved out of the workspace while it was being opened');
    }
    const stat = fs.fstatSync(fd);
    if (intent === 'directory' || intent === 'make-directory') {
      if (!stat.isDirectory()) throw new WorkspacePathError(`"${input}" is not a directory.`, 'Read a file with fs_read.');
    } else if (!stat.isFile()) {
      throw notRegular(input, intent, stat.isDirectory());
    } else if (stat.nlink > 1 && intent === 'write') {
      throw new WorkspacePathError(
        `Refused "${input}": it has ${stat.nlink} hard links, so writing it would also change the file under its other names, which may be outside the workspace.`,
        'Write to a new path, or delete this name first and write the file again.',
      );
    } else if (stat.nlink > 1 && !this.allLinksInside(fd)) {
      throw new WorkspacePathError(
        `Refused "${input}": it is hard-linked (${stat.nlink} names) to a file outside the workspace.`,
        'Only files whose every name is inside the workspace can be read.',
      );
    }
    return { fd, stat, realPath, relative: this.relative(realPath) };
  }

  /** Whether every name of the descriptor's inode is found by walking the workspace. */
  private allLinksInside(fd: number): boolean {
    const target = fs.fstatSync(fd, { bigint: true });
    let found = 0n;
    let seen = 0;
    const pending = [this.root];
    while (pending.length > 0) {
      const dir = pending.pop()!;
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const entry of entries) {
        if (++seen > LINK_SEARCH_LIMIT) return false;
        if (!entry.isDirectory() && !entry.isFile()) continue;
        const entryPath = path.join(dir, entry.name);
        let stat: fs.BigIntStats;
        try {
          stat = fs.lstatSync(entryPath, { bigint: true });
        } catch {
          continue; // vanished meanwhile
        }
        // A hard link never crosses a file system: another device cannot hold one.
        if (stat.dev !== target.dev) continue;
        if (stat.isDirectory()) pending.push(entryPath);
        else if (stat.ino === target.ino && ++found >= target.nlink) return true;
      }
    }
    return false;
  }
}

/**
 * Replaces the content of a file opened by openWrite with `data`, and closes it. Truncating only
 * now: the descriptor was verified to be inside the workspace (and outside guarded folders).
 */
export function replaceContent(file: OpenedFile, data: Uint8Array): void {
  try {
    fs.ftruncateSync(file.fd, 0);
    let written = 0;
    while (written < data.length) written += fs.writeSync(file.fd, data, written, data.length - written, written);
  } finally {
    fs.closeSync(file.fd);
  }
}

/** A symlink's target, or undefined when `where` is not (or no longer) a symlink. */
function readSymlink(where: string): string | undefined {
  try {
    return fs.readlinkSync(where);
  } catch {
    return undefined;
  }
}

/** Whether `where` exists and is neither a directory nor a symlink. */
function isPlainEntry(where: string): boolean {
  try {
    const stat = fs.lstatSync(where);
    return !stat.isDirectory() && !stat.isSymbolicLink();
  } catch {
    return false;
  }
}

function escapeError(input: string, detail = 'it resolves outside the workspace through a symlink'): WorkspacePathError {
  return new WorkspacePathError(`Refused "${input}": ${detail}.`, 'Only files inside the workspace can be used.');
}

function guardedError(input: string, hit: ProtectedPath): WorkspacePathError {
  return new WorkspacePathError(
    `Refused "${input}": it is inside ${hit.where}, which acx loads code and configuration from; no tool may write there.`,
    'Write somewhere else in the workspace. Those files are changed by the operator, outside acx.',
  );
}

function notFound(input: string): WorkspacePathError {
  return new WorkspacePathError(`"${input}" does not exist in the workspace.`, 'List the directory with fs_list to see what exists.');
}

function notRegular(input: string, intent: Intent, directory: boolean): WorkspacePathError {
  if (intent === 'write') return new WorkspacePathError(`"${input}" exists and is not a regular file.`, 'Write to a regular file path.');
  return new WorkspacePathError(
    `"${input}" is not a regular file.`,
    directory ? 'List a directory with fs_list.' : 'Only regular files can be read.',
  );
}

/** Why a name on the path could not be opened, for a failure that is not a race. */
function openFailure(input: string, intent: Intent, code: string, relative: string, last: boolean): WorkspacePathError {
  if (code === 'ENOENT') return notFound(input);
  if (code === 'ENOTDIR') {
    return last
      ? new WorkspacePathError(`"${input}" is not a directory.`, 'Read a file with fs_read.')
      : new WorkspacePathError(`"${relative}" in "${input}" is not a directory.`);
  }
  if (code === 'EISDIR' || code === 'ENXIO') return notRegular(input, intent, code === 'EISDIR');
  return new WorkspacePathError(`Cannot open "${input}" (${code}).`);
}
