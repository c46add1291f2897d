import fs from 'node:fs';
import path from 'node:path';
import type { GuardedDirectory } from './protected.ts';
import { Workspace, WorkspacePathError, type WorkspaceHooks } from './workspace.ts';

/**
 * A workspace of one or more roots: the primary root (relative paths start there) and extra
 * roots an editor adds (ACP's `additionalDirectories`). A model-supplied path is either
 * relative to the primary root or absolute and inside one of the roots; it is then opened by
 * that root's Workspace, so every root keeps the same confinement (no `..`, no escaping
 * symlinks or hard links). An absolute path outside every root is refused.
 */
export interface WorkspaceRootsOptions {
  primary: string;
  additional?: readonly string[];
  hooks?: WorkspaceHooks;
  /** The folders acx loads code and configuration from: no root writes into them. */
  guarded?: readonly GuardedDirectory[];
}

export interface LocatedPath {
  workspace: Workspace;
  /** The path relative to that workspace's root (what Workspace opens). */
  relative: string;
}

export class WorkspaceRoots {
  readonly primary: Workspace;
  readonly additional: readonly Workspace[];
  private readonly inputs: readonly string[];

  constructor(options: WorkspaceRootsOptions) {
    this.primary = new Workspace(options.primary, options.hooks, options.guarded);
    this.additional = (options.additional ?? []).map((root) => new Workspace(root, options.hooks, options.guarded));
    this.inputs = [options.primary, ...(options.additional ?? [])].map((root) => path.resolve(root));
  }

  get all(): readonly Workspace[] {
    return [this.primary, ...this.additional];
  }

  /** The extra roots' real paths (for the execute sandbox's view). */
  get additionalPaths(): string[] {
    return this.additional.map((workspace) => workspace.root);
  }

  /** Which root a model path belongs to, and the path relative to it. */
  locate(input: string): LocatedPath {
    if (typeof input !== 'string' || !path.isAbsolute(input)) return { workspace: this.primary, relative: input };
    const absolute = path.normalize(input);
    // Deepest root first: an extra root may lie inside the primary one.
    const candidates = this.all
      .flatMap((workspace, index) => [realRoot(workspace), this.inputs[index]!].flatMap((root) => (root ? [{ workspace, root }] : [])))
      .sort((a, b) => b.root.length - a.root.length);
    for (const { workspace, root } of candidates) {
      if (absolute === root) return { workspace, relative: '.' };
      if (absolute.startsWith(root + path.sep)) return { workspace, relative: absolute.slice(root.length + 1) };
    }
    throw new WorkspacePathError(
      `"${input}" is an absolute path outside the workspace roots (${this.inputs.join(', ')}).`,
      'Use a path relative to the workspace root, or an absolute path inside one of the workspace roots.',
    );
  }

  /** The absolute path a model path names (for display: editors show and follow these). */
  absolute(input: string): string {
    const { workspace, relative } = this.locate(input);
    workspace.segments(relative); // refuses `..`, NUL and the like before anything is shown
    return path.join(this.inputs[this.all.indexOf(workspace)]!, relative);
  }

  /** A file's current text, read with the same confinement; undefined when it does not exist yet. */
  readText(input: string): string | undefined {
    const { workspace, relative } = this.locate(input);
    let file;
    try {
      file = workspace.openRead(relative);
    } catch (error) {
      if (WorkspacePathError.isInstance(error) && !existsInside(workspace, relative)) return undefined;
      throw error;
    }
    try {
      return fs.readFileSync(file.fd, 'utf8');
    } finally {
      fs.closeSync(file.fd);
    }
  }
}

/** A root's real path; undefined when it is gone (opening a path in it then says so). */
function realRoot(workspace: Workspace): string | undefined {
  try {
    return workspace.root;
  } catch {
    return undefined;
  }
}

/** Whether anything is at the path (lexically, for telling "not there" from "refused"). */
function existsInside(workspace: Workspace, relative: string): boolean {
  try {
    fs.lstatSync(path.join(workspace.root, ...workspace.segments(relative)));
    return true;
  } catch {
    return false;
  }
}
