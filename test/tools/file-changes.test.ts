// The workspace snapshot behind execute's file-change parts: real files in a temp directory.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, snapshotWorkspace } from '../../src/tools/sandbox/file-changes.ts';

function workspace(): string {
  const root = mkdtempSync(join(tmpdir(), 'acx-file-changes-'));
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'src', 'a.ts'), 'a');
  writeFileSync(join(root, 'b.txt'), 'b');
  return root;
}

describe('snapshotWorkspace / diffSnapshots', () => {
  it('reports created, modified and deleted files by path, sorted, in subdirectories too', () => {
    const root = workspace();
    const before = snapshotWorkspace(root)!;
    writeFileSync(join(root, 'src', 'a.ts'), 'a changed');
    rmSync(join(root, 'b.txt'));
    writeFileSync(join(root, 'src', 'c.ts'), 'c');
    expect(diffSnapshots(before, snapshotWorkspace(root)!)).toEqual([
      { path: 'b.txt', kind: 'deleted' },
      { path: join('src', 'a.ts'), kind: 'modified' },
      { path: join('src', 'c.ts'), kind: 'created' },
    ]);
  });

  it('skips .git and node_modules, and gives up (undefined) past the file limit rather than report a partial list', () => {
    const root = workspace();
    const before = snapshotWorkspace(root)!;
    mkdirSync(join(root, '.git'));
    writeFileSync(join(root, '.git', 'index'), 'x');
    mkdirSync(join(root, 'node_modules'));
    writeFileSync(join(root, 'node_modules', 'dep.js'), 'x');
    expect(diffSnapshots(before, snapshotWorkspace(root)!)).toEqual([]);
    expect(snapshotWorkspace(root, 1)).toBeUndefined();
    expect(snapshotWorkspace(root, 2)?.size).toBe(2);
  });
});
