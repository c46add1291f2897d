// What the journal keeps of a file change for session.rewind (issue 33 §2): the content within the
// per-file and per-call limits, the hash always, so a rewind can still tell when a file changed.
import { createHash } from 'node:crypto';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileChangeEntry, recordingBudget } from '../../src/engine/file-record.ts';
import { RECORDED_CONTENT_LIMIT } from '../../src/tools/tool.ts';

const call = { turnId: 't1', callId: 'c1', toolName: 'execute' };
const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

describe('fileChangeEntry', () => {
  it("keeps contents until the call's budget is spent, then hashes only", () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-record-'));
    writeFileSync(join(dir, 'a.txt'), 'aaaaaaaa');
    writeFileSync(join(dir, 'b.txt'), 'bbbbbbbb');
    const budget = recordingBudget(10);
    const a = fileChangeEntry({ path: 'a.txt', kind: 'created', record: { location: join(dir, 'a.txt'), before: null } }, call, budget);
    const b = fileChangeEntry({ path: 'b.txt', kind: 'modified', record: { location: join(dir, 'b.txt') } }, call, budget);
    expect(a).toMatchObject({ path: 'a.txt', before: { state: 'missing' }, after: { sha256: sha('aaaaaaaa'), content: Buffer.from('aaaaaaaa') } });
    expect(b).toMatchObject({ path: 'b.txt', before: { state: 'unknown' } });
    expect(b!.after).toEqual({ sha256: sha('bbbbbbbb') });
  });

  it('hashes a file over the per-file limit without keeping it, and records nothing for a symlink or a change with no record', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-record-'));
    const big = Buffer.alloc(RECORDED_CONTENT_LIMIT + 1, 0x61);
    writeFileSync(join(dir, 'big.bin'), big);
    symlinkSync(join(dir, 'big.bin'), join(dir, 'link'));
    const entry = fileChangeEntry({ path: 'big.bin', kind: 'created', record: { location: join(dir, 'big.bin'), before: null } }, call, recordingBudget());
    expect(entry!.after).toEqual({ sha256: sha(big) });
    expect(fileChangeEntry({ path: 'link', kind: 'created', record: { location: join(dir, 'link') } }, call, recordingBudget())).toBeUndefined();
    expect(fileChangeEntry({ path: 'big.bin', kind: 'modified' }, call, recordingBudget())).toBeUndefined();
  });
});
