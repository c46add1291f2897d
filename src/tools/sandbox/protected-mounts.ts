import fs from 'node:fs';
import path from 'node:path';
import { type GuardedDirectory, isBelow, isWithin, protectedPathsIn, resolveLoose } from './protected.ts';
import type { ViewMount } from './view.ts';
import { Workspace } from './workspace.ts';

/**
 * The mounts that keep a sandboxed command from changing what `guarded` holds inside the
 * writable `boundRoots` (each bound writable at its own path before these mounts): each protected path bound
 * read-only over itself, and every directory between its outermost root and it bound over
 * itself too. A mount point cannot be renamed or removed from inside the namespace (EBUSY), so
 * those binds keep the path acx loads from pointing where it points now: without them a command
 * could move a parent aside (`mv agents old`) and build a new agent directory, plugins and all,
 * at the old name. The writable binds come first: a later mount covers an earlier one.
 *
 * A protected directory that does not exist yet is created, empty, first: a path that does not
 * exist cannot be mounted over, and an empty tools/, mcp/ or prompts/ means to every reader what
 * a missing one means. Mounting its nearest existing ancestor read-only instead is no answer in
 * general: that ancestor can be the workspace root itself (an agent at the top of its repository),
 * and then nothing would be writable. A protected *file* that does not exist (a top-level file of
 * a guarded directory that is itself a workspace root, say harness-requirements.json) has no such
 * stand-in: an empty file there would be read as a broken one. It is left unmounted; the file
 * tools still refuse it, and none of those files is code.
 */
export function protectionMounts(boundRoots: readonly string[], guarded: readonly GuardedDirectory[]): ViewMount[] {
  // Guarded folders are found by real path, and mounted at that path as seen below its root's bind.
  const roots = boundRoots.map((bound) => ({ bound, real: resolveLoose(bound) }));
  const realRoots = roots.map((root) => root.real);
  const pins = new Set<string>();
  const readOnly: string[] = [];
  for (const entry of protectedPathsIn(guarded, realRoots)) {
    // The outermost root: moving any directory below it would move the path along.
    const outer = roots.filter((root) => isWithin(entry.path, root.real)).sort((a, b) => a.real.length - b.real.length)[0]!;
    const inView = (real: string) => path.join(outer.bound, path.relative(outer.real, real));
    if (!exists(entry.path)) {
      if (!entry.directory || !createDirectory(outer.real, entry.path)) continue;
    }
    for (let dir = path.dirname(entry.path); isBelow(dir, outer.real); dir = path.dirname(dir)) {
      // A root is a mount point already.
      if (!realRoots.includes(dir)) pins.add(inView(dir));
    }
    readOnly.push(inView(entry.path));
  }
  const depth = (dir: string) => dir.split(path.sep).length;
  return [
    ...[...pins].sort((a, b) => depth(a) - depth(b)).map((dir): ViewMount => ({ type: 'bind', path: dir })),
    ...readOnly.map((entry): ViewMount => ({ type: 'ro-bind', path: entry })),
  ];
}

/**
 * Creates the directory `target` (and missing parents) below `root` with the workspace's own
 * confinement (each step opened without following a link out of the root), so that a command
 * running meanwhile cannot redirect the creation elsewhere. False when it cannot be created:
 * a command, acting as the same user on the host, could not create it either.
 */
function createDirectory(root: string, target: string): boolean {
  try {
    const made = new Workspace(root).makeDirectory(path.relative(root, target));
    fs.closeSync(made.fd);
    return made.realPath === target;
  } catch {
    return false;
  }
}

function exists(target: string): boolean {
  return fs.lstatSync(target, { throwIfNoEntry: false }) !== undefined;
}
