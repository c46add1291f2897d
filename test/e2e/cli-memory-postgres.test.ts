import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PostgresMemoryRecords } from '../../src/memory/postgres-store.ts';
import { cleanEnv, ROOT, runAcx, tempDir } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * An agent's memory on PostgreSQL, from the outside: with ACX_STORE a postgres:// URL, `acx run`
 * of the notes-keeper example writes what it is told to remember in one run and reads it back in
 * the next — two processes, the memory living in the database (rows under the agent's id), not in
 * a memory.db under the home. resolved-config says where the memory is, without the password.
 */
let cluster: PostgresCluster | undefined;
let server: ModelServer | undefined;
beforeAll(() => {
  if (!POSTGRES_SKIP) cluster = startPostgres();
}, scaled(120_000));
afterAll(() => cluster?.stop());
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const FREEZE = 'The release freeze starts Friday 12:00 UTC and lasts until Monday.';

describe('memory on PostgreSQL (e2e)', { timeout: scaled(180_000) }, () => {
  it.skipIf(POSTGRES_SKIP !== '')(`acx run remembers in one run and recalls in the next, from the database${POSTGRES_SKIP}`, async () => {
    const base = tempDir('acx-memory-pg-e2e-');
    const agent = join(base, 'agent');
    cpSync(join(ROOT, 'examples/notes-keeper'), agent, { recursive: true });
    const home = join(base, 'home');
    mkdirSync(home);
    // Trust authentication ignores the password: it is here to show it is never reported.
    const url = cluster!.createDatabase('memory_e2e').replace('postgres://acx@', 'postgres://acx:s3cret-pw@');
    server = await startModelServer({
      script: [
        { toolCalls: [{ name: 'memory_write', input: { key: 'release-freeze', value: FREEZE } }] },
        'Noted the release freeze.',
        { toolCalls: [{ name: 'memory_read', input: { key: 'release-freeze' } }] },
        'The freeze starts Friday 12:00 UTC.',
      ],
    });
    const env = cleanEnv({ OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: server.openaiBaseURL, ACX_STORE: url });
    const acx = (args: string[]) => runAcx(args, { home, env });

    const config = await acx(['resolved-config', agent]);
    expect(config.status, config.stderr).toBe(0);
    const resolved = JSON.parse(config.stdout) as Record<string, unknown>;
    expect(resolved).toMatchObject({ memory_provider: 'sqlite', memory_store: 'postgres', store: 'postgres' });
    expect(config.stdout).not.toContain('s3cret-pw');

    const first = await acx(['run', agent, `Remember this: ${FREEZE}`, '--model', 'openai:demo-model']);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout.trim()).toBe('Noted the release freeze.');
    const second = await acx(['run', agent, 'When does the release freeze start?', '--model', 'openai:demo-model']);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('The freeze starts Friday 12:00 UTC.');
    // The second run's memory_read answered from what the first run wrote.
    const recalled = JSON.stringify(server.requests[3]!.body);
    expect(recalled).toContain(`release-freeze (saved `);
    expect(recalled).toContain(FREEZE);
    expect(first.stderr + second.stderr).not.toContain('s3cret-pw');

    // The records are rows under the agent's id, seeds and observed exchanges included; no file.
    expect(existsSync(resolved.memory_path as string)).toBe(false);
    const records = await PostgresMemoryRecords.open(url, 'notes-keeper');
    try {
      expect(await records.read('release-freeze')).toMatchObject({ value: FREEZE, source: 'tool' });
      expect((await records.list({ prefix: 'team/' })).map((r) => r.key)).toEqual(['team/deploy-policy', 'team/on-call']);
      expect(await records.count('observed/')).toBe(2);
      expect((await records.search('freeze friday')).map((h) => h.key)[0]).toBe('release-freeze');
    } finally {
      await records.close();
    }
    const other = await PostgresMemoryRecords.open(url, 'someone-else');
    try {
      expect(await other.count()).toBe(0);
    } finally {
      await other.close();
    }
  });
});
