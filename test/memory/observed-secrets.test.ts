// What an observed exchange leaves in memory, read back as the rows themselves (SQL), on both
// stores behind MemoryRecords: the SQLite file and a real throwaway PostgreSQL cluster (skipped,
// saying why, when the binaries are not installed). An AWS secret must go wherever its key id
// went, and ordinary text must come through untouched.
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresMemoryRecords } from '../../src/memory/postgres-store.ts';
import { createSqliteMemoryProvider, type MemoryExchange } from '../../src/memory/provider.ts';
import { openSqliteMemory } from '../../src/memory/records.ts';
import { addLiveSecret } from '../../src/util/scrub.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';

const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
/** A key id this process holds (AWS_ACCESS_KEY_ID in its environment): the live values scrub it first. */
const LIVE_ID = 'AKIA2EXAMPLELIVE0002';
addLiveSecret(LIVE_ID);

const dir = mkdtempSync(join(tmpdir(), 'acx-observed-secrets-'));
const postgres = postgresForSuite();
let pgUrl = '';
beforeAll(() => {
  if (!POSTGRES_SKIP) pgUrl = postgres.database('observed');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function exchange(sessionId: string, overrides: Partial<MemoryExchange>): MemoryExchange {
  return { agentId: 'ada', sessionId, prompt: '', text: '', unspoken: false, toolCalls: [], ...overrides };
}

const EXCHANGES: Array<{ exchange: MemoryExchange; row: string }> = [
  {
    exchange: exchange('live', { prompt: `deploy with ${LIVE_ID} ${SECRET}`, text: 'Deployed.' }),
    row: 'User: deploy with [REDACTED] [REDACTED]\nAgent: Deployed.',
  },
  {
    exchange: exchange('halves', { prompt: `my key id is ${KEY_ID}`, text: `and the secret you gave is ${SECRET}` }),
    row: 'User: my key id is [REDACTED]\nAgent: and the secret you gave is [REDACTED]',
  },
  {
    exchange: exchange('cli', {
      prompt: 'configure the CLI',
      toolCalls: [{ name: 'execute', input: { command: `aws configure set aws_access_key_id ${KEY_ID}\naws configure set aws_secret_access_key ${SECRET}` } }],
    }),
    row: 'User: configure the CLI\nTools: execute({"command":"aws configure set aws_access_key_id [REDACTED]\\naws configure set aws_secret_access_key [REDACTED]"})',
  },
  {
    // JSON writes a control character as \u001b, whose last letter would join the secret: inputs are scrubbed before they are serialised.
    exchange: exchange('escaped', { prompt: 'paste', toolCalls: [{ name: 'note', input: { text: `${KEY_ID} \u001b${SECRET}` } }] }),
    row: 'User: paste\nTools: note({"text":"[REDACTED] \\u001b[REDACTED]"})',
  },
  {
    // Cut at 3000 characters right through the key id: not one piece of either half may stay.
    exchange: exchange('clipped', { prompt: `${'p'.repeat(2990)} ${KEY_ID} ${SECRET}` }),
    row: `User: ${'p'.repeat(2990)} [REDACTED…`,
  },
  {
    exchange: exchange('ordinary', {
      prompt: 'The fix is commit 3f786850e387550fdab836ed7e6dc881de23001b; the secret key rotation runs monthly.',
      text: 'Noted: internationalizationandlocalizationsupport ships in 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=.',
    }),
    row:
      'User: The fix is commit 3f786850e387550fdab836ed7e6dc881de23001b; the secret key rotation runs monthly.\n' +
      'Agent: Noted: internationalizationandlocalizationsupport ships in 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=.',
  },
];

const stores: Array<{ name: string; skip: string; open: () => Promise<{ records: () => import('../../src/memory/records.ts').MemoryRecords; rows: () => Promise<string[]> }> }> = [
  {
    name: 'sqlite',
    skip: '',
    open: async () => {
      const path = join(dir, 'memory.db');
      return {
        records: () => openSqliteMemory(path),
        rows: async () => {
          const db = new DatabaseSync(path, { readOnly: true });
          try {
            return (db.prepare("SELECT key, value FROM memories WHERE key LIKE 'observed/%'").all() as Array<{ key: string; value: string }>)
              .sort((a, b) => a.key.localeCompare(b.key))
              .map((row) => row.value);
          } finally {
            db.close();
          }
        },
      };
    },
  },
  {
    name: 'postgres',
    skip: POSTGRES_SKIP,
    open: async () => {
      await (await PostgresMemoryRecords.open(pgUrl, 'ada')).close();
      return {
        records: () => new PostgresMemoryRecords(pgUrl, 'ada'),
        rows: async () => {
          const client = new pg.Client({ connectionString: pgUrl });
          await client.connect();
          try {
            const result = await client.query<{ value: string }>("SELECT value FROM acx_memories WHERE agent_id = 'ada' AND key LIKE 'observed/%' ORDER BY key");
            return result.rows.map((row) => row.value);
          } finally {
            await client.end();
          }
        },
      };
    },
  },
];

for (const store of stores) {
  describe(`observed exchanges in ${store.name} memory`, () => {
    it.skipIf(store.skip !== '')(`keep no AWS secret beside a redacted key id, and ordinary text as it was${store.skip}`, async () => {
      const { records, rows } = await store.open();
      const provider = createSqliteMemoryProvider({ path: join(dir, 'unused.db'), records });
      try {
        for (const { exchange } of EXCHANGES) await provider.observe(exchange);
      } finally {
        await provider.close();
      }
      // Keys sort by session slug.
      const bySession = new Map(EXCHANGES.map(({ exchange, row }) => [exchange.sessionId, row]));
      expect(await rows()).toEqual(['cli', 'clipped', 'escaped', 'halves', 'live', 'ordinary'].map((session) => bySession.get(session)));
      const all = (await rows()).join('\n');
      expect(all).not.toContain(SECRET.slice(0, 8));
      expect(all).not.toContain('AKIAIOSFO');
    });
  });
}
