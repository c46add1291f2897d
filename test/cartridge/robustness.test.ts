import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { Cartridge, MAX_INFLATED_ENTRY_BYTES } from '../../src/cartridge/container.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { alteredCopy, buildTestCartridge, type BuiltCartridge, runAcx } from '../support/cartridge-fixtures.ts';
import { tempDir } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

/** Issue 10, item 4: files that are not files, and archives that inflate without end. */
let built: BuiltCartridge;
beforeAll(() => {
  built = buildTestCartridge(tempDir('acx-robust-'));
});

const MiB = 1024 * 1024;
const canMkfifo = spawnSync('mkfifo', ['--version']).status === 0;

function mkfifo(path: string): void {
  const made = spawnSync('mkfifo', [path]);
  if (made.status !== 0) throw new Error(`mkfifo ${path} failed: ${made.stderr}`);
}

describe.skipIf(!canMkfifo)('only regular files are opened (needs mkfifo)', () => {
  // A FIFO blocked `acx verify` and `acx run` forever; the kill bound turns a hang into a failure.
  it('acx verify refuses a FIFO named x.acx, and a cartridge whose journal path is a FIFO', async () => {
    const dir = tempDir('acx-robust-');
    const fifo = join(dir, 'x.acx');
    mkfifo(fifo);
    const verify = await runAcx(['verify', fifo], {}, { killAfterMs: 30_000 });
    expect(verify.stderr).toContain(`${fifo} is not a regular file (it is a FIFO (named pipe)); acx opens only regular .acx files`);
    expect(verify.code).toBe(EXIT.failure);

    const beside = join(dir, 'real.acx');
    copyFileSync(built.path, beside);
    mkfifo(`${beside}-journal`);
    const journal = await runAcx(['verify', beside], {}, { killAfterMs: 30_000 });
    expect(journal.stderr).toContain(`${beside}-journal is a FIFO (named pipe), where SQLite keeps the cartridge's journal`);
    expect(journal.code).toBe(EXIT.failure);
  }, scaled(90_000));

  it('a directory named x.acx is refused the same way', () => {
    const dir = join(tempDir('acx-robust-'), 'x.acx');
    mkdirSync(dir);
    expect(() => verifyCartridge(dir)).toThrow(/is not a regular file \(it is a directory\)/);
  });
});

/** A copy of the trusted cartridge with `count` ROM entries that each inflate to 16 MiB. */
function withBombs(count: number, options: { correctOids: boolean }): string {
  return alteredCopy(built.path, join(tempDir('acx-robust-'), 'bombs.acx'), (db) => {
    const insertFile = db.prepare('INSERT INTO sqlar(name, mode, mtime, sz, data) VALUES(?, 420, 0, ?, ?)');
    const insertObject = db.prepare("INSERT INTO objects(oid, kind, source_ref, canon, zone, sz) VALUES(?, 'sqlar', ?, 'raw', 'rom', ?)");
    const body = Buffer.alloc(16 * MiB);
    db.exec('BEGIN');
    for (let i = 0; i < count; i++) {
      const name = `rom/knowledge/bomb-${String(i).padStart(2, '0')}.md`;
      body.write(name, 0); // distinct bytes, distinct oids
      const oid = `sha256:${createHash('sha256').update(options.correctOids ? body : name).digest('hex')}`;
      insertFile.run(name, body.length, deflateSync(body, { level: 1 }));
      insertObject.run(oid, name, body.length);
    }
    // Unsigned, with every oid right: `legacy`, which --allow-portable would run.
    db.exec("DELETE FROM signatures; DELETE FROM cartridge WHERE key = 'acx.rom_manifest_hash'; COMMIT");
  });
}

describe('inflating is capped per verification', () => {
  it('20 entries of 16 MiB (320 MiB in all) stop verification at the 256 MiB total', () => {
    const verdict = verifyCartridge(withBombs(20, { correctOids: true }));
    expect(verdict.verdict).toBe('tampered');
    expect(verdict.reasons).toEqual([expect.stringMatching(/^ROM object rom\/knowledge\/bomb-\d\d\.md: archive entries inflate to more than 256 MiB in total/)]);
  });

  it('stops at the first ROM object that does not match, without inflating the rest', () => {
    const verdict = verifyCartridge(withBombs(8, { correctOids: false }));
    expect(verdict.verdict).toBe('tampered');
    expect(verdict.reasons).toEqual(['ROM object rom/knowledge/bomb-00.md: content does not match its recorded digest']);
  });

  it('one entry may inflate to 64 MiB; acx stores a bigger file raw instead of deflating it', () => {
    const cart = Cartridge.create(join(tempDir('acx-robust-'), 'big.acx'));
    const big = Buffer.alloc(MAX_INFLATED_ENTRY_BYTES + 1);
    cart.putFile('rom/knowledge/big.md', big, { compression: 'zlib' });
    cart.putFile('rom/knowledge/small.md', Buffer.alloc(1024), { compression: 'zlib' });
    expect(cart.fileRows().map((r) => [r.name, r.stored === r.sz ? 'raw' : 'deflated'])).toEqual([
      ['rom/knowledge/big.md', 'raw'],
      ['rom/knowledge/small.md', 'deflated'],
    ]);
    cart.db.prepare("UPDATE sqlar SET data = ? WHERE name = 'rom/knowledge/big.md'").run(deflateSync(big, { level: 1 }));
    expect(() => cart.getFile('rom/knowledge/big.md')).toThrow(`archive entry "rom/knowledge/big.md" declares ${big.length} bytes deflated; acx inflates at most 64 MiB per entry`);
    cart.close();
  });
});
