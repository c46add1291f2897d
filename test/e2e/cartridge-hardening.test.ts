import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/output.ts';
import { respondByTurn, startModelServer, type ModelServer } from '../support/model-server.ts';
import {
  alteredCopy,
  buildTestCartridge,
  type BuiltCartridge,
  localModelEnv,
  runAcx,
  saveDigest,
  signatureRows,
  tempDir,
} from '../agent/cartridge-fixtures.ts';

/**
 * Issue 10's attacks on cartridges, replayed against `acx run` as a user starts it: a real
 * process, a real file, the local model server counting requests (an attack that got through
 * would show as a model call).
 */
let root: string;
let base: BuiltCartridge;
const servers: ModelServer[] = [];

async function modelServer(): Promise<ModelServer> {
  const server = await startModelServer({ fallback: respondByTurn(() => ({ text: 'done' })) });
  servers.push(server);
  return server;
}

function copyOf(name: string, mutate?: (db: DatabaseSync) => void): string {
  return alteredCopy(base.path, join(root, `${name}.acx`), mutate);
}

beforeAll(() => {
  root = tempDir('acx-e2e-harden-');
  base = buildTestCartridge(root, { name: 'base' });
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

describe.concurrent('hostile cartridges against acx run (e2e)', { timeout: 120_000 }, () => {
  it('item 3: a trusted cartridge with an AFTER INSERT ON sqlar trigger is refused as tampered; the trigger never fires', async () => {
    const server = await modelServer();
    const file = copyOf('trigger', (db) => db.exec('CREATE TRIGGER wipe AFTER INSERT ON sqlar BEGIN DELETE FROM signatures; END'));
    const before = { signatures: signatureRows(file), save: saveDigest(file) };
    expect(before.signatures).toHaveLength(1);
    const run = await runAcx(['run', file, 'hello', '--registry', base.registry], localModelEnv(join(root, 'trigger'), server.openaiBaseURL));
    expect(run.stderr).toContain('is tampered and will not run');
    expect(run.stderr).toContain('trigger "wipe" on sqlar is not part of the cartridge format');
    expect(run.code).toBe(EXIT.tampered);
    expect(signatureRows(file)).toEqual(before.signatures);
    expect(saveDigest(file)).toBe(before.save);
    expect(server.requests).toHaveLength(0);
    const verify = await runAcx(['verify', file, '--registry', base.registry]);
    expect(verify.code).toBe(EXIT.tampered);
    expect(verify.stdout).toMatch(/verdict:\s+tampered/);
  });

  it.skipIf(spawnSync('mkfifo', ['--version']).status !== 0)('item 4: acx run on a FIFO named x.acx says it is not a regular file instead of hanging (needs mkfifo)', async () => {
    const fifo = join(root, 'x.acx');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const run = await runAcx(['run', fifo, 'hello'], localModelEnv(join(root, 'fifo'), 'http://127.0.0.1:9'), { killAfterMs: 60_000 });
    expect(run.stderr).toContain(`${fifo} is not a regular file (it is a FIFO (named pipe)); acx opens only regular .acx files`);
    expect(run.code).toBe(EXIT.failure);
  });
});
