import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { deflateRawSync, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Cartridge, decodeSqlarData } from '../../src/cartridge/container.ts';
import { APPLICATION_ID, portablePathProblem } from '../../src/cartridge/format.ts';
import { compareCodePoints, computeRomManifest } from '../../src/cartridge/manifest.ts';
import { canonicalJson } from '../../src/util/jcs.ts';
import { REFERENCE_CARTRIDGES, tempDir } from './helpers.ts';

describe('container format', () => {
  it('brands a new file ACX1 at header offset 68 with user_version 0x01000100 at offset 60', () => {
    const path = join(tempDir(), 'new.acx');
    Cartridge.create(path).close();
    const header = readFileSync(path).subarray(0, 100);
    expect(header.subarray(68, 72).toString('latin1')).toBe('ACX1');
    expect(header.readUInt32BE(60)).toBe(0x01000100);
    const c = Cartridge.open(path);
    expect(c.savePresent).toBe(false);
    for (const t of ['cartridge', 'sqlar', 'memory', 'objects', 'signatures', 'attestations', 'vectors']) expect(c.hasTable(t)).toBe(true);
    c.close();
  });

  it('keeps sqlar at the stock schema', () => {
    const path = join(tempDir(), 'new.acx');
    Cartridge.create(path).close();
    const db = new DatabaseSync(path, { readOnly: true });
    const cols = (db.prepare('PRAGMA table_info(sqlar)').all() as Array<{ name: string; type: string }>).map((c) => `${c.name}:${c.type}`);
    db.close();
    expect(cols).toEqual(['name:TEXT', 'mode:INT', 'mtime:INT', 'sz:INT', 'data:BLOB']);
  });

  it('refuses files that are not cartridges with a clear error', () => {
    const dir = tempDir();
    const plain = join(dir, 'plain.db');
    new DatabaseSync(plain).exec('CREATE TABLE t(x)');
    expect(() => Cartridge.open(plain)).toThrow(/not an \.acx cartridge: application_id/);
    const text = join(dir, 'text.acx');
    copyFileSync(new URL(import.meta.url), text);
    expect(() => Cartridge.open(text)).toThrow(/not an \.acx cartridge/);
    expect(() => Cartridge.open(join(dir, 'missing.acx'))).toThrow(/no such cartridge/);
  });

  it('reads raw, zlib (stock sqlar) and raw-deflate (reference) rows, and writes zlib on request', () => {
    const body = Buffer.from('hello hello hello hello hello hello hello '.repeat(20));
    expect(decodeSqlarData('rom/a', body.length, body)).toEqual(body);
    expect(decodeSqlarData('rom/a', body.length, deflateSync(body))).toEqual(body);
    expect(decodeSqlarData('rom/a', body.length, deflateRawSync(body))).toEqual(body);
    expect(() => decodeSqlarData('rom/a', body.length + 1, deflateSync(body))).toThrow(/cannot be decompressed/);
    const path = join(tempDir(), 'z.acx');
    const c = Cartridge.create(path);
    c.putFile('rom/x.txt', body, { compression: 'zlib' });
    const row = c.fileRows()[0];
    expect(row?.stored).toBeLessThan(body.length);
    expect(c.getFile('rom/x.txt')).toEqual(body);
    c.close();
  });

  it('enforces the portable path rule', () => {
    for (const ok of ['rom/a.md', 'save/x/y-1_2.json', 'rom/skills/a/SKILL.md']) expect(portablePathProblem(ok)).toBeNull();
    for (const bad of ['/rom/a', 'rom', 'rom/../x', 'rom/./x', 'rom//x', 'other/x', 'rom\\x', 'rom/x\0y', 'rom/.hidden', 'rom/ä.md', `rom/${'a'.repeat(129)}`]) {
      expect(portablePathProblem(bad), bad).not.toBeNull();
    }
    const c = Cartridge.create(join(tempDir(), 'p.acx'));
    expect(() => c.putFile('rom/../etc/passwd', Buffer.from('x'))).toThrow(/unsafe archive path/);
    c.close();
  });

  it('recomputes the reference cartridges’ ROM manifest hash exactly', () => {
    for (const path of REFERENCE_CARTRIDGES) {
      const c = Cartridge.open(path);
      const m = computeRomManifest(c);
      expect(m.mismatches).toEqual([]);
      expect(m.manifestHash).toBe(c.getMeta('acx.rom_manifest_hash'));
      c.close();
    }
  });

  it('creates a cartridge in one transaction: all of it, as a plain rollback-journal file, or nothing', () => {
    const dir = tempDir();
    const ok = join(dir, 'ok.acx');
    const n = Cartridge.createWith(ok, (c) => {
      c.setMeta('acx.agent_name', 'x');
      return c.putFile('rom/a.txt', Buffer.from('hello'));
    });
    expect(n).toBe(5);
    const header = readFileSync(ok).subarray(0, 100);
    expect([header[18], header[19]]).toEqual([1, 1]); // rollback journal, not WAL
    expect(header.readUInt32BE(60)).toBe(0x01000100);
    expect(existsSync(`${ok}-journal`)).toBe(false);
    const c = Cartridge.open(ok);
    expect(c.getFile('rom/a.txt')?.toString()).toBe('hello');
    c.close();

    const failed = join(dir, 'failed.acx');
    expect(() => Cartridge.createWith(failed, (c) => {
      c.setMeta('acx.agent_name', 'x');
      throw new Error('boom');
    })).toThrow('boom');
    expect(() => Cartridge.open(failed)).toThrow(/not an \.acx cartridge/); // not even the schema was committed
    expect(() => Cartridge.createWith(ok, () => 0)).toThrow(/already exists/);
  });

  it('orders by code point, also around surrogates and lone surrogates', () => {
    const byIterator = (a: string, b: string): number => {
      const x = [...a].map((ch) => ch.codePointAt(0) ?? 0);
      const y = [...b].map((ch) => ch.codePointAt(0) ?? 0);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    const units = ['a', '\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uE000', '\uFFFF', '\u{1F600}', '\u{10000}'];
    const strings = [''];
    for (const u of units) for (const v of units) strings.push(u, u + v, `x${u}${v}`);
    for (const a of strings) {
      for (const b of strings) expect(Math.sign(compareCodePoints(a, b)), JSON.stringify([a, b])).toBe(Math.sign(byIterator(a, b)));
    }
  });

  it('sorts by code point and canonicalises with JCS', () => {
    expect(['b', 'a', '\u{1F600}', '\uFFFF'].sort(compareCodePoints)).toEqual(['a', 'b', '\uFFFF', '\u{1F600}']);
    expect(canonicalJson({ b: 1, a: [true, null, 'x'] })).toBe('{"a":[true,null,"x"],"b":1}');
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(/non-finite/);
    expect(APPLICATION_ID).toBe(0x41435831);
  });
});
