import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { removeTree } from '../../src/util/remove-tree.ts';

// Root ignores file modes, so these say something only when run as an ordinary user: CI runs this
// file again as uid 65534 (.ci/run's non-root pass), where a plain recursive rm fails on them.

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) {
    fs.chmodSync(dir, 0o755);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-remove-tree-'));
  made.push(dir);
  return dir;
}

it('removes a tree holding a mode-000 folder and a read-only folder with files in it', () => {
  const root = path.join(scratch(), 'call');
  fs.mkdirSync(path.join(root, 'locked', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(root, 'locked', 'deep', 'file'), 'x');
  fs.mkdirSync(path.join(root, 'mask-dir'));
  fs.mkdirSync(path.join(root, 'read-only'));
  fs.writeFileSync(path.join(root, 'read-only', 'file'), 'x');
  fs.chmodSync(path.join(root, 'locked', 'deep'), 0);
  fs.chmodSync(path.join(root, 'locked'), 0);
  fs.chmodSync(path.join(root, 'mask-dir'), 0);
  fs.chmodSync(path.join(root, 'read-only'), 0o500);

  expect(removeTree(root)).toBeUndefined();
  expect(fs.existsSync(root)).toBe(false);
});

it('does not follow a symlink out of the tree, nor change what it points at', () => {
  const outside = path.join(scratch(), 'outside');
  fs.mkdirSync(outside, { mode: 0o500 });
  fs.chmodSync(outside, 0o500);
  const root = path.join(scratch(), 'call');
  fs.mkdirSync(path.join(root, 'locked'), { recursive: true });
  fs.symlinkSync(outside, path.join(root, 'locked', 'link'));
  fs.chmodSync(path.join(root, 'locked'), 0);

  expect(removeTree(root)).toBeUndefined();
  expect(fs.existsSync(root)).toBe(false);
  expect(fs.statSync(outside).mode & 0o777).toBe(0o500);
});

it('is quiet about a tree that is not there', () => {
  expect(removeTree(path.join(scratch(), 'missing'))).toBeUndefined();
});
