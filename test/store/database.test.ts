// Schema migrations are additive, so a file written by a newer acx opens in an older one: the
// older acx runs no migration on it and ignores what it does not know, and a step that would take
// something away from an older acx is refused, with nothing changed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, userVersion, type Database, type Migration } from '../../src/store/database.ts';
import { Journal } from '../../src/store/journal.ts';
import { SqliteWakeStore } from '../../src/store/sqlite-wake-store.ts';
import { AcxError } from '../../src/core/errors.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-database-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const BASE: Migration[] = [
  `CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, body TEXT, color TEXT);
   CREATE TABLE tags (note TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (note, tag)) WITHOUT ROWID;
   CREATE INDEX notes_body ON notes(body);
   CREATE TRIGGER notes_title AFTER UPDATE OF title ON notes BEGIN UPDATE tags SET note = new.title WHERE note = old.title; END;`,
];

/** Objects and columns of the file, to compare before and after. */
function shape(db: Database): unknown {
  const objects = db.prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name").all();
  const columns = db.prepare("SELECT m.name AS tbl, c.name FROM sqlite_master m, pragma_table_xinfo(m.name) c WHERE m.type = 'table' ORDER BY 1, c.cid").all();
  return { version: userVersion(db), objects, columns };
}

function refusal(step: string): { error: unknown; before: unknown; after: unknown; rows: unknown } {
  const db = openDatabase(join(dir, `${Math.random().toString(36).slice(2)}.db`), { migrations: BASE });
  try {
    db.prepare("INSERT INTO notes (title, body) VALUES ('a', 'kept')").run();
    const before = shape(db);
    let error: unknown;
    try {
      openDatabaseAgain(db, [...BASE, step]);
    } catch (caught) {
      error = caught;
    }
    return { error, before, after: shape(db), rows: db.prepare('SELECT title, body FROM notes').all() };
  } finally {
    db.close();
  }
}

/** The same file opened by an acx whose history is `migrations` (as a newer acx would open it). */
function openDatabaseAgain(db: Database, migrations: Migration[]): void {
  const path = (db.prepare('PRAGMA database_list').get() as { file: string }).file;
  openDatabase(path, { migrations }).close();
}

describe('additive migrations', () => {
  const refused: Array<[string, string, RegExp]> = [
    ['dropping a table', 'DROP TABLE tags', /removes the table tags/],
    ['dropping a column', 'ALTER TABLE notes DROP COLUMN color', /redefines the table notes/],
    ['renaming a column', 'ALTER TABLE notes RENAME COLUMN body TO text', /redefines the table notes/],
    ['renaming a table', 'ALTER TABLE tags RENAME TO labels', /removes the table tags/],
    ['dropping an index', 'DROP INDEX notes_body', /removes the index notes_body/],
    [
      'redefining a trigger',
      'DROP TRIGGER notes_title; CREATE TRIGGER notes_title AFTER UPDATE OF title ON notes BEGIN DELETE FROM tags WHERE note = old.title; END;',
      /redefines the trigger notes_title/,
    ],
    [
      'rebuilding a table with a NOT NULL column and no default',
      `CREATE TABLE notes2 (id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, body TEXT, color TEXT, rank INTEGER NOT NULL);
       INSERT INTO notes2 SELECT id, title, body, color, 0 FROM notes; DROP TABLE notes; ALTER TABLE notes2 RENAME TO notes;
       CREATE INDEX notes_body ON notes(body);
       CREATE TRIGGER notes_title AFTER UPDATE OF title ON notes BEGIN UPDATE tags SET note = new.title WHERE note = old.title; END;`,
      /adds the column notes.rank as NOT NULL without a default/,
    ],
    ['a unique index over an existing table', 'CREATE UNIQUE INDEX notes_unique_body ON notes(body)', /adds the unique index notes_unique_body over the existing table notes/],
    [
      'a foreign key that blocks deleting from an existing table',
      'CREATE TABLE links (note INTEGER NOT NULL REFERENCES notes(id), url TEXT)',
      /foreign key links -> notes\(note\) blocks deleting from the existing table notes/,
    ],
  ];
  for (const [what, step, reason] of refused) {
    it(`refuses ${what}, changing nothing`, () => {
      const { error, before, after, rows } = refusal(step);
      expect(error).toBeInstanceOf(AcxError);
      expect((error as AcxError).code).toBe('store-migration-not-additive');
      expect((error as AcxError).message).toMatch(/migration 2 is not additive/);
      expect((error as AcxError).message).toMatch(reason);
      expect((error as AcxError).hint).toMatch(/older acx/);
      expect(after).toEqual(before);
      expect(rows).toEqual([{ title: 'a', body: 'kept' }]);
    });
  }

  it('accepts new columns (also on a WITHOUT ROWID table), tables, indexes, triggers and cascading foreign keys', () => {
    const path = join(dir, 'grown.db');
    openDatabase(path, { migrations: BASE }).close();
    const grown = [
      ...BASE,
      `ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
       ALTER TABLE tags ADD COLUMN weight REAL;
       CREATE TABLE links (note INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, url TEXT NOT NULL);
       CREATE UNIQUE INDEX links_url ON links(url);
       CREATE INDEX notes_pinned ON notes(pinned);
       CREATE TRIGGER notes_unpin AFTER UPDATE OF body ON notes BEGIN UPDATE notes SET pinned = 0 WHERE id = new.id; END;`,
    ];
    const db = openDatabase(path, { migrations: grown });
    try {
      expect(userVersion(db)).toBe(2);
    } finally {
      db.close();
    }
  });
});

describe('a file from a newer acx', () => {
  /** What a newer acx adds to BASE: a column with a default, a table, an index, a trigger. */
  const NEWER: Migration[] = [
    ...BASE,
    `ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
     CREATE TABLE history (note INTEGER REFERENCES notes(id) ON DELETE CASCADE, body TEXT);
     CREATE INDEX notes_pinned ON notes(pinned);
     CREATE TRIGGER notes_history AFTER UPDATE OF body ON notes BEGIN INSERT INTO history VALUES (old.id, old.body); END;`,
  ];

  it('opens in an older acx, which runs no migration, reads and writes it, and leaves what it does not know alone', () => {
    const path = join(dir, 'newer.db');
    const newer = openDatabase(path, { migrations: NEWER });
    newer.prepare("INSERT INTO notes (title, body, pinned) VALUES ('a', 'first', 1)").run();
    newer.close();

    const older = openDatabase(path, { migrations: BASE });
    try {
      expect(userVersion(older)).toBe(2);
      older.prepare("UPDATE notes SET body = 'second' WHERE title = 'a'").run();
      older.prepare("INSERT INTO notes (title, body) VALUES ('b', 'new')").run();
      older.prepare("DELETE FROM notes WHERE title = 'b'").run();
      older.prepare("INSERT INTO notes (title, body) VALUES ('c', 'new')").run();
    } finally {
      older.close();
    }

    const again = openDatabase(path, { migrations: NEWER });
    try {
      expect(again.prepare('SELECT title, body, pinned FROM notes ORDER BY title').all()).toEqual([
        { title: 'a', body: 'second', pinned: 1 },
        { title: 'c', body: 'new', pinned: 0 },
      ]);
      // The newer acx's trigger ran on the older one's write.
      expect(again.prepare('SELECT body FROM history').all()).toEqual([{ body: 'first' }]);
    } finally {
      again.close();
    }
  });

  it('the journal opens a journal a newer acx added to, and keeps working', () => {
    const path = join(dir, 'journal.db');
    new Journal(path).close();
    growAsNewerAcx(
      path,
      `ALTER TABLE messages ADD COLUMN tokens INTEGER;
       CREATE TABLE turn_costs (turn_id TEXT PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE, usd REAL);`,
    );
    const journal = new Journal(path);
    try {
      journal.ensureSession('s');
      journal.transaction(() => {
        journal.startTurn('t', 's');
        journal.appendMessage('s', 't', 'user', { role: 'user', content: 'hello' } as ModelMessage);
      });
      expect(journal.messages('s').map((m) => m.message)).toEqual([{ role: 'user', content: 'hello' }]);
      journal.deleteSession('s');
      expect(journal.hasSession('s')).toBe(false);
    } finally {
      journal.close();
    }
  });

  it('the wake store opens a wake store a newer acx added to, and keeps working', async () => {
    const path = join(dir, 'wake.db');
    await new SqliteWakeStore(path).close();
    growAsNewerAcx(path, `ALTER TABLE inbox ADD COLUMN priority INTEGER NOT NULL DEFAULT 0; CREATE TABLE wake_notes (note TEXT);`);
    const store = new SqliteWakeStore(path, { isAlive: () => false });
    try {
      const holder = { pid: 1, host: 'h', started: 1 };
      const admission = await store.admit('s', { id: 'e1', text: 'ping' }, { max: 0, windowMs: 60_000, cooldownMs: 60_000 }, holder);
      expect(admission.kind).toBe('leader');
      expect((await store.pending('s')).map((item) => item.text)).toEqual(['ping']);
    } finally {
      await store.close();
    }
  });
});

/** What a newer acx's migration does to a store file: one more additive step, one more version. */
function growAsNewerAcx(path: string, step: string): void {
  const db = openDatabase(path);
  try {
    const version = userVersion(db);
    db.exec(`BEGIN; ${step}; PRAGMA user_version = ${version + 1}; COMMIT;`);
  } finally {
    db.close();
  }
}
