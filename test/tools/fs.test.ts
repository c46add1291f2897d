import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createFsTools, type FsToolsOptions } from '../../src/tools/builtin/fs.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { tempDir, toolContext, removeTempDirs } from './helpers.ts';

afterAll(removeTempDirs);

let root: string;
let workspace: string;
let outside: string;

beforeEach(() => {
  root = tempDir('acx-fs-');
  workspace = path.join(root, 'ws');
  outside = path.join(root, 'outside');
  fs.mkdirSync(workspace);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET');
  fs.mkdirSync(path.join(workspace, 'src'));
  fs.writeFileSync(path.join(workspace, 'src', 'a.txt'), 'hello');
});

function registry(options: Partial<FsToolsOptions> = {}): ToolRegistry {
  const registry = new ToolRegistry();
  registry.load(createFsTools({ workspace, ...options }));
  return registry;
}

async function call(name: string, input: unknown, options: Partial<FsToolsOptions> = {}) {
  return registry(options).run(name, input, toolContext());
}

describe('fs tools inside the workspace', () => {
  it('declare the right kinds, effects and scopes', () => {
    const [read, list, write] = createFsTools({ workspace });
    expect([read.name, read.kind, read.effect, read.capabilityScopes]).toEqual(['fs_read', 'read', 'read-only', ['fs.read']]);
    expect([list.name, list.kind, list.effect, list.capabilityScopes]).toEqual(['fs_list', 'read', 'read-only', ['fs.read']]);
    expect([write.name, write.kind, write.effect, write.capabilityScopes]).toEqual(['fs_write', 'edit', 'idempotent', ['fs.write']]);
  });

  it('reads, writes (creating parents) and lists', async () => {
    expect(await call('fs_read', { path: 'src/a.txt' })).toEqual({ ok: true, output: 'hello' });
    expect(await call('fs_write', { path: 'docs/new/b.md', content: '# B' })).toEqual({ ok: true, output: 'Wrote 3 bytes to docs/new/b.md.' });
    expect(fs.readFileSync(path.join(workspace, 'docs/new/b.md'), 'utf8')).toBe('# B');
    expect((await call('fs_list', {})).output).toBe('Workspace root: 2 entries\ndocs/\nsrc/');
    expect((await call('fs_list', { path: 'src' })).output).toBe('src/: 1 entries\na.txt (5 bytes)');
  });

  it('writing is idempotent and replaces the whole content', async () => {
    fs.writeFileSync(path.join(workspace, 'f.txt'), 'a much longer original content');
    await call('fs_write', { path: 'f.txt', content: 'short' });
    await call('fs_write', { path: 'f.txt', content: 'short' });
    expect(fs.readFileSync(path.join(workspace, 'f.txt'), 'utf8')).toBe('short');
  });

  it('follows a symlink that stays inside the workspace', async () => {
    fs.symlinkSync('src/a.txt', path.join(workspace, 'link.txt'));
    expect((await call('fs_read', { path: 'link.txt' })).output).toBe('hello');
  });

  it('reads large files in pages with a note', async () => {
    fs.writeFileSync(path.join(workspace, 'big.txt'), 'x'.repeat(100) + 'y'.repeat(50));
    const first = await call('fs_read', { path: 'big.txt' }, { maxReadBytes: 100 });
    expect(first.output).toBe(`${'x'.repeat(100)}\n[showing bytes 0-100 of 150; call fs_read again with offset=100 for more]`);
    const second = await call('fs_read', { path: 'big.txt', offset: 100 }, { maxReadBytes: 100 });
    expect(second.output).toBe(`${'y'.repeat(50)}\n[showing bytes 100-150 of 150]`);
  });

  it('describes a binary file instead of dumping it', async () => {
    fs.writeFileSync(path.join(workspace, 'img.bin'), Buffer.from([1, 2, 0, 3]));
    expect((await call('fs_read', { path: 'img.bin' })).output).toBe('img.bin is a binary file (4 bytes); its content is not shown.');
  });

  it('refuses content over the write limit, writing nothing', async () => {
    const run = await call('fs_write', { path: 'huge.txt', content: 'z'.repeat(11) }, { maxWriteBytes: 10 });
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/the limit is 10/);
    expect(fs.existsSync(path.join(workspace, 'huge.txt'))).toBe(false);
  });

  it('writing through an editor that refuses leaves no file or directory behind; one it filled stays', async () => {
    const refused: FsToolsOptions['contents'] = { write: () => Promise.reject(new Error('the editor said no')) };
    const run = await call('fs_write', { path: 'docs/new/b.md', content: '# B' }, { contents: refused });
    expect(run).toMatchObject({ ok: false });
    expect(run.output).toContain('the editor said no');
    expect(fs.readdirSync(workspace).sort()).toEqual(['src']);
    // An existing file is left as it was.
    expect((await call('fs_write', { path: 'src/a.txt', content: 'x' }, { contents: refused })).ok).toBe(false);
    expect(fs.readFileSync(path.join(workspace, 'src/a.txt'), 'utf8')).toBe('hello');
    // An editor that wrote the file and then failed: what it wrote is not acx's to remove.
    const halfDone: FsToolsOptions['contents'] = {
      write: async (file, content) => {
        fs.writeFileSync(file, content);
        throw new Error('saved, then the editor crashed');
      },
    };
    expect((await call('fs_write', { path: 'docs/c.md', content: '# C' }, { contents: halfDone })).ok).toBe(false);
    expect(fs.readFileSync(path.join(workspace, 'docs/c.md'), 'utf8')).toBe('# C');
  });
});

describe('fs tools refuse to leave the workspace', () => {
  const cases: Array<[string, string, unknown, RegExp]> = [
    ['an absolute path (read)', 'fs_read', { path: '/etc/passwd' }, /absolute path/],
    ['an absolute path (write)', 'fs_write', { path: '/tmp/acx-escape.txt', content: 'x' }, /absolute path/],
    ['.. traversal (read)', 'fs_read', { path: '../outside/secret.txt' }, /contains "\.\."/],
    ['.. in the middle', 'fs_read', { path: 'src/../../outside/secret.txt' }, /contains "\.\."/],
    ['.. traversal (write)', 'fs_write', { path: '../outside/new.txt', content: 'x' }, /contains "\.\."/],
    ['.. traversal (list)', 'fs_list', { path: '..' }, /contains "\.\."/],
    ['a NUL byte', 'fs_read', { path: 'src/a.txt\u0000.png' }, /NUL/],
  ];
  for (const [label, tool, input, message] of cases) {
    it(`refuses ${label}`, async () => {
      const run = await call(tool, input);
      expect(run.ok).toBe(false);
      expect(run.output).toMatch(message);
    });
  }

  it('refuses a symlink to a file outside', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'leak.txt'));
    const run = await call('fs_read', { path: 'leak.txt' });
    expect(run.output).toMatch(/resolves outside the workspace through a symlink/);
    expect(String(run.output)).not.toContain('TOP SECRET');
  });

  it('refuses writing through a symlink to a file outside', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'leak.txt'));
    const run = await call('fs_write', { path: 'leak.txt', content: 'overwritten' });
    expect(run.ok).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
  });

  it('refuses writing through a dangling symlink that points outside', async () => {
    fs.symlinkSync(path.join(outside, 'created.txt'), path.join(workspace, 'dangling.txt'));
    const run = await call('fs_write', { path: 'dangling.txt', content: 'x' });
    expect(run.ok).toBe(false);
    expect(fs.existsSync(path.join(outside, 'created.txt'))).toBe(false);
  });

  it('refuses reading, writing and listing via a symlinked parent directory', async () => {
    fs.symlinkSync(outside, path.join(workspace, 'escape'));
    const read = await call('fs_read', { path: 'escape/secret.txt' });
    const write = await call('fs_write', { path: 'escape/planted.txt', content: 'x' });
    const deep = await call('fs_write', { path: 'escape/sub/planted.txt', content: 'x' });
    const list = await call('fs_list', { path: 'escape' });
    for (const run of [read, write, deep, list]) {
      expect(run.ok).toBe(false);
      expect(run.output).toMatch(/outside the workspace/);
    }
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  });

  it('refuses a file swapped for an escaping symlink after its directory was opened', async () => {
    const swap = (directory: string): void => {
      if (directory !== 'src') return;
      fs.rmSync(path.join(workspace, 'src', 'a.txt'));
      fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'src', 'a.txt'));
    };
    const read = await call('fs_read', { path: 'src/a.txt' }, { hooks: { afterEnter: swap } });
    expect(read.ok).toBe(false);
    expect(read.output).toMatch(/Refused "src\/a.txt": it resolves outside the workspace through a symlink/);
    expect(String(read.output)).not.toContain('TOP SECRET');

    fs.rmSync(path.join(workspace, 'src', 'a.txt'));
    fs.writeFileSync(path.join(workspace, 'src', 'a.txt'), 'hello');
    const write = await call('fs_write', { path: 'src/a.txt', content: 'pwned' }, { hooks: { afterEnter: swap } });
    expect(write.ok).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
  });

  it('keeps walking the directory it opened when that directory is swapped for a symlink', async () => {
    fs.mkdirSync(path.join(outside, 'src'));
    fs.writeFileSync(path.join(outside, 'src', 'a.txt'), 'OUTSIDE COPY');
    const swapInside = (directory: string): void => {
      if (directory !== 'src') return;
      fs.renameSync(path.join(workspace, 'src'), path.join(workspace, 'real-src'));
      fs.symlinkSync(path.join(outside, 'src'), path.join(workspace, 'src'));
    };
    const read = await call('fs_read', { path: 'src/a.txt' }, { hooks: { afterEnter: swapInside } });
    expect(read).toEqual({ ok: true, output: 'hello' });
    fs.unlinkSync(path.join(workspace, 'src'));
    fs.renameSync(path.join(workspace, 'real-src'), path.join(workspace, 'src'));
    const write = await call('fs_write', { path: 'src/new.txt', content: 'inside' }, { hooks: { afterEnter: swapInside } });
    expect(write).toEqual({ ok: true, output: 'Wrote 6 bytes to real-src/new.txt.' });
    expect(fs.readdirSync(path.join(outside, 'src'))).toEqual(['a.txt']);
  });

  it('refuses, and removes what it created, when a directory on the path is moved out mid-call', async () => {
    const moveOut = (directory: string): void => {
      if (directory !== 'src') return;
      fs.renameSync(path.join(workspace, 'src'), path.join(outside, 'moved-src'));
      fs.symlinkSync(path.join(outside, 'moved-src'), path.join(workspace, 'src'));
    };
    const read = await call('fs_read', { path: 'src/a.txt' }, { hooks: { afterEnter: moveOut } });
    expect(read.ok).toBe(false);
    expect(read.output).toMatch(/was moved out of the workspace while it was being opened/);
    expect(String(read.output)).not.toContain('hello');

    fs.unlinkSync(path.join(workspace, 'src'));
    fs.renameSync(path.join(outside, 'moved-src'), path.join(workspace, 'src'));
    const write = await call('fs_write', { path: 'src/sub/new.txt', content: 'x' }, { hooks: { afterEnter: moveOut } });
    expect(write.ok).toBe(false);
    expect(write.output).toMatch(/was moved out of the workspace/);
    // The directory and the file this call made (now outside) were removed again.
    expect(fs.readdirSync(path.join(outside, 'moved-src'))).toEqual(['a.txt']);
  });

  it('refuses a hard link to a file outside, for reading and for writing', async () => {
    fs.linkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'linked.txt'));
    const read = await call('fs_read', { path: 'linked.txt' });
    expect(read).toMatchObject({ ok: false, output: expect.stringMatching(/Refused "linked.txt": it is hard-linked \(2 names\) to a file outside the workspace/) });
    expect(String(read.output)).not.toContain('TOP SECRET');
    const write = await call('fs_write', { path: 'linked.txt', content: 'overwritten' });
    expect(write).toMatchObject({ ok: false, output: expect.stringMatching(/Refused "linked.txt": it has 2 hard links/) });
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
  });

  it('reads a file hard-linked only within the workspace, but does not write it', async () => {
    fs.linkSync(path.join(workspace, 'src', 'a.txt'), path.join(workspace, 'twin.txt'));
    expect(await call('fs_read', { path: 'twin.txt' })).toEqual({ ok: true, output: 'hello' });
    const write = await call('fs_write', { path: 'twin.txt', content: 'changed' });
    expect(write.ok).toBe(false);
    expect(write.output).toMatch(/it has 2 hard links/);
    expect(fs.readFileSync(path.join(workspace, 'src', 'a.txt'), 'utf8')).toBe('hello');
  });

  it('refuses reading a FIFO instead of hanging', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [path.join(workspace, 'pipe')]);
    const run = await call('fs_read', { path: 'pipe' });
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/not a regular file/);
  });
});
