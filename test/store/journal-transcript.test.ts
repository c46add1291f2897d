// Journal.transcript(): a session's messages kept parsed between reads (so a long session's next
// turn parses only what was written since), which must always read what the file holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.ts';

let dir: string;
let journal: Journal;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-journal-transcript-'));
  journal = new Journal(join(dir, 'journal.db'));
  journal.ensureSession('s');
  journal.startTurn('t', 's');
  for (const content of ['one', 'two']) journal.appendMessage('s', 't', 'user', { role: 'user', content });
});
afterEach(() => {
  journal.close();
  rmSync(dir, { recursive: true, force: true });
});

const user = (content: string): ModelMessage => ({ role: 'user', content });
const texts = () => journal.transcript('s').map((stored) => stored.message.content);

describe('Journal.transcript', () => {
  it('reads what messages() reads, giving unchanged messages as the same objects and appended ones after them', () => {
    const first = journal.transcript('s');
    expect(first).toEqual(journal.messages('s'));
    journal.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'three' });
    const second = journal.transcript('s');
    expect(second).toEqual(journal.messages('s'));
    expect(second.map((stored) => stored.message.content)).toEqual(['one', 'two', 'three']);
    expect(second[0]!.message).toBe(first[0]!.message);
    expect(second[1]!.message).toBe(first[1]!.message);
    // What was handed out earlier does not change under its reader.
    expect(first).toHaveLength(2);
  });

  it("reads another connection's writes (another process on the same file)", () => {
    expect(texts()).toEqual(['one', 'two']);
    const other = new Journal(join(dir, 'journal.db'));
    try {
      other.replaceMessage('s', 1, user('one, edited elsewhere'));
      expect(texts()).toEqual(['one, edited elsewhere', 'two']);
      other.compact('s', 2, user('[summary] one'));
      expect(texts()).toEqual(['[summary] one', 'two']);
    } finally {
      other.close();
    }
  });

  it("reads this connection's replacements, compactions and cleared history", () => {
    expect(texts()).toEqual(['one', 'two']);
    // A message appended before the last one read (a free sequence number given explicitly).
    journal.appendMessage('s', null, 'note', user('zero'), 0);
    expect(texts()).toEqual(['zero', 'one', 'two']);
    journal.replaceMessage('s', 2, user('two, capped'));
    expect(texts()).toEqual(['zero', 'one', 'two, capped']);
    journal.compact('s', 2, user('[summary] one'));
    expect(texts()).toEqual(['[summary] one', 'two, capped']);
    journal.clearHistory('s');
    expect(texts()).toEqual([]);
    // A message appended below the last one read (here: after the history was cleared, at 1 again).
    journal.appendMessage('s', null, 'user', user('again'));
    expect(texts()).toEqual(['again']);
  });

  it('never keeps what a transaction wrote and then rolled back', () => {
    expect(texts()).toEqual(['one', 'two']);
    expect(() =>
      journal.transaction(() => {
        journal.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'undone' });
        expect(texts()).toEqual(['one', 'two', 'undone']);
        throw new Error('roll back');
      }),
    ).toThrow('roll back');
    expect(texts()).toEqual(['one', 'two']);
    expect(journal.messages('s').map((stored) => stored.message.content)).toEqual(['one', 'two']);
  });

  it("hands this connection's committed appends to the next read as the objects appended, without reading them back", () => {
    expect(texts()).toEqual(['one', 'two']);
    const three: ModelMessage = { role: 'assistant', content: 'three' };
    const four: ModelMessage = { role: 'user', content: 'four' };
    journal.appendMessage('s', 't', 'assistant', three);
    journal.transaction(() => journal.appendMessage('s', 't', 'user', four));
    const read = journal.transcript('s');
    expect(read).toEqual(journal.messages('s'));
    expect(read[2]!.message).toBe(three);
    expect(read[3]!.message).toBe(four);
  });

  it('drops appends whose transaction rolled back, through begin/rollback as the async store runs them', () => {
    expect(texts()).toEqual(['one', 'two']);
    expect(journal.begin()).toBe(true);
    journal.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'undone' });
    journal.rollback();
    expect(texts()).toEqual(['one', 'two']);
    // The number the rolled-back message had goes to the next one, which is kept.
    expect(journal.begin()).toBe(true);
    journal.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'three' });
    journal.commit();
    expect(texts()).toEqual(['one', 'two', 'three']);
    expect(journal.transcript('s')).toEqual(journal.messages('s'));
  });

  it('reads the file after an append that left a gap, or one whose transaction ended unheard', () => {
    expect(texts()).toEqual(['one', 'two']);
    journal.appendMessage('s', 't', 'user', user('five'), 5);
    journal.appendMessage('s', 't', 'user', user('six'));
    expect(journal.transcript('s')).toEqual(journal.messages('s'));
    // A transaction committed behind the Journal's back (its own SQL on the connection).
    journal.db.exec('BEGIN');
    journal.appendMessage('s', 't', 'user', user('seven'));
    journal.db.exec('COMMIT');
    expect(texts()).toEqual(['one', 'two', 'five', 'six', 'seven']);
    journal.db.exec('BEGIN');
    journal.appendMessage('s', 't', 'user', user('never'));
    journal.db.exec('ROLLBACK');
    expect(texts()).toEqual(['one', 'two', 'five', 'six', 'seven']);
    // Rolled back unheard, and the next transaction the journal runs commits before any read.
    journal.db.exec('BEGIN');
    journal.appendMessage('s', 't', 'user', user('never either'));
    journal.db.exec('ROLLBACK');
    journal.transaction(() => journal.setSessionAttribute('s', 'note', 'x'));
    expect(texts()).toEqual(['one', 'two', 'five', 'six', 'seven']);
  });

  it('hands back an appended message whose JSON reads back differently (bytes, an undefined key) as the file holds it', () => {
    expect(texts()).toEqual(['one', 'two']);
    const image: ModelMessage = { role: 'user', content: [{ type: 'image', image: new Uint8Array([1, 2, 3]), mediaType: 'image/png', providerOptions: undefined }] };
    journal.appendMessage('s', 't', 'user', image);
    const read = journal.transcript('s');
    expect(read[2]!.message).not.toBe(image);
    expect(read).toStrictEqual(journal.messages('s'));
  });
});
