import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSaveZone } from '../../src/cartridge/save.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { defaultHarnessRequirements } from '../../src/contract/requirements.ts';
import { respondByTurn, startModelServer, type ModelServer } from '../support/model-server.ts';
import {
  buildTestCartridge,
  type BuiltCartridge,
  localModelEnv,
  ROOT,
  runAcx,
  saveDigest,
  saveRows,
  tempDir,
} from '../support/cartridge-fixtures.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * `acx run FILE.acx` end to end, as a user runs it: real processes, real cartridges on disk, the
 * local model server standing in for the provider (so "no model call" is counted, not assumed).
 */
const EXAMPLE = join(ROOT, 'examples/cartridges/notes-keeper.acx');
const EXAMPLE_REGISTRY = join(ROOT, 'examples/cartridges/trust-registry.json');
const EXAMPLE_CASSETTE = join(ROOT, 'examples/cartridges/cassettes/quickstart.json');
const PROMPT = 'Remember that the release freeze starts on 12 December. When can we still deploy before it?';

let root: string;
let base: BuiltCartridge;
let refusing: BuiltCartridge;
const servers: ModelServer[] = [];

/** A fresh model server per test, so its request count belongs to that test alone. */
async function modelServer(): Promise<ModelServer> {
  const server = await startModelServer({
    fallback: respondByTurn(({ turn }) =>
      turn === 0
        ? {
            toolCalls: [
              { name: 'search_memory', input: { query: 'deploy' } },
              { name: 'add_memory', input: { summary: 'The release freeze starts on 12 December.' } },
              { name: 'memory_write', input: { key: 'rom/team-on-call', value: 'Nobody is on call.' } },
            ],
          }
        : { text: 'Deploy by Thursday 10 December, before 15:00 UTC.' },
    ),
  });
  servers.push(server);
  return server;
}

function copyOf(cartridge: string, name: string): string {
  const path = join(root, `${name}.acx`);
  copyFileSync(cartridge, path);
  return path;
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}

beforeAll(() => {
  root = tempDir('acx-e2e-cart-');
  base = buildTestCartridge(root, { name: 'base' });
  const manifest = defaultHarnessRequirements() as unknown as { requiredTools: unknown[] };
  manifest.requiredTools.push({
    role: 'acx:deploy',
    tier: 'required',
    capabilityScopes: ['x-deploy'],
    name: 'deploy',
    description: 'Ship a release to production.',
    inputSchema: { type: 'object', required: ['version'], properties: { version: { type: 'string' } } },
  });
  refusing = buildTestCartridge(root, { name: 'refusing', edit: { 'harness-requirements.json': `${JSON.stringify(manifest, null, 2)}\n` } });
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

// Each test spawns real acx processes (1-3); on a loaded machine a process start alone takes seconds.
describe.concurrent('acx run FILE.acx (e2e)', { timeout: scaled(120_000) }, () => {
  it('runs the shipped example offline from its cassette; verify and strip still match the signature afterwards', async () => {
    const file = copyOf(EXAMPLE, 'example');
    const env = { ACX_HOME: join(root, 'example-state'), ACX_CONFIG_HOME: join(root, 'example-config') };
    const run = await runAcx(['run', file, PROMPT, '--replay', EXAMPLE_CASSETTE, '--registry', EXAMPLE_REGISTRY], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Thursday 10 December');
    // What the agent learned is in SAVE, the accepted descriptor too.
    const rows = saveRows(file);
    expect(rows.memory.map((m) => JSON.parse(m.payload).summary)).toEqual(['The release freeze starts on 12 December.']);
    expect(rows.files).toEqual(['save/compliance/harness-compliance.json']);
    const verify = await runAcx(['verify', file, '--registry', EXAMPLE_REGISTRY]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/verdict:\s+trusted/);
    const strip = await runAcx(['strip', file, '-o', join(root, 'example-rom.acx')]);
    expect(strip.code).toBe(0);
    expect(strip.stdout).toMatch(/equal:\s+yes/);
    expect(verifyCartridge(join(root, 'example-rom.acx'), { registry: EXAMPLE_REGISTRY }).manifestHash).toBe(
      verifyCartridge(EXAMPLE, { registry: EXAMPLE_REGISTRY }).manifestHash,
    );
  });

  it('makes ROM memory searchable but read-only, and lands the agent\'s writes in SAVE', async () => {
    const server = await modelServer();
    const file = copyOf(base.path, 'memory');
    const run = await runAcx(['run', file, 'what do you know about deploys?', '--registry', base.registry], localModelEnv(join(root, 'memory'), server.openaiBaseURL));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('Deploy by Thursday 10 December, before 15:00 UTC.');
    expect(server.requests).toHaveLength(2);
    const results = server.requests[1]!.view.messages.flatMap((m) => m.toolResults ?? []).map((r) => String(r.output));
    expect(results[0]).toContain('rom/team-deploy-policy: We deploy on Tuesdays and Thursdays before 15:00 UTC');
    expect(results[1]).toMatch(/^Saved as "notes\//);
    expect(results[2]).toMatch(/signed ROM memory and is read-only/);
    const rows = saveRows(file);
    expect(rows.memory).toHaveLength(1);
    expect(JSON.parse(rows.memory[0]!.payload)).toMatchObject({ portable: false, summary: 'The release freeze starts on 12 December.', zone: 'save' });
    expect(rows.memory[0]!.payload).not.toContain('Nobody is on call');
    // The SAVE writes left the ROM alone: the signature still holds.
    const verdict = verifyCartridge(file, { registry: base.registry });
    expect(verdict.verdict).toBe('trusted');
    expect(verdict.manifestHash).toBe(base.manifestHash);
  });

  it('never runs a tampered cartridge: exit 4 before any model call', async () => {
    const server = await modelServer();
    const file = copyOf(base.path, 'tampered');
    const db = new DatabaseSync(file);
    const row = db.prepare("SELECT data FROM sqlar WHERE name='rom/prompts/system-prompt.md'").get() as { data: Uint8Array };
    const bytes = Buffer.from(row.data);
    bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0x01;
    db.prepare("UPDATE sqlar SET data=? WHERE name='rom/prompts/system-prompt.md'").run(bytes);
    db.close();
    const before = saveDigest(file);
    const run = await runAcx(['run', file, 'hello', '--registry', base.registry, '--allow-portable'], localModelEnv(join(root, 'tampered'), server.openaiBaseURL));
    expect(run.code).toBe(EXIT.tampered);
    expect(run.stderr).toContain('is tampered and will not run');
    expect(run.stderr).toContain('rom/prompts/system-prompt.md');
    expect(server.requests).toHaveLength(0);
    expect(saveDigest(file)).toBe(before);
  });

  it('runs a portable cartridge only when allowed (flag or ACX_ALLOW_PORTABLE=1)', async () => {
    const server = await modelServer();
    const file = copyOf(base.path, 'portable');
    const env = localModelEnv(join(root, 'portable'), server.openaiBaseURL);
    const before = saveDigest(file);
    const refused = await runAcx(['run', file, 'hello'], env);
    expect(refused.code).toBe(EXIT.refused);
    expect(refused.stderr).toContain('is portable, not trusted');
    expect(refused.stderr).toContain('--allow-portable');
    expect(server.requests).toHaveLength(0);
    expect(saveDigest(file)).toBe(before);
    const allowed = await runAcx(['run', file, 'hello'], { ...env, ACX_ALLOW_PORTABLE: '1' });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/WARNING cartridge verdict .*verdict=portable .*allowed_by=allow-portable/);
    expect(server.requests.length).toBeGreaterThan(0);
  });

  it('refuses an unsupported harness: JSON-RPC -32602, exit 3, SAVE rows hash identical, no model call', async () => {
    const server = await modelServer();
    const file = copyOf(refusing.path, 'refused');
    const before = saveDigest(file);
    const run = await runAcx(['run', file, 'ship it', '--registry', refusing.registry], localModelEnv(join(root, 'refused'), server.openaiBaseURL));
    expect(run.code).toBe(EXIT.refused);
    expect(run.stderr).toContain('was not activated');
    const error = JSON.parse(lastLine(run.stderr));
    expect(error).toMatchObject({ code: -32602, message: 'Unsupported harness', data: { unmet: ['tool:acx:deploy'] } });
    expect(error.data.requested).toContain('tool:acx:deploy');
    expect(saveDigest(file)).toBe(before);
    expect(server.requests).toHaveLength(0);
  });

  it('acx handshake: accept prints the descriptor and writes nothing, --save persists it (exit 0); refuse exits 3 and writes nothing', async () => {
    const accepted = copyOf(base.path, 'handshake-accept');
    const env = { ACX_HOME: join(root, 'hs-state'), ACX_CONFIG_HOME: join(root, 'hs-config') };
    const untouched = saveDigest(accepted);
    const asked = await runAcx(['handshake', accepted, '--registry', base.registry], env);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain('verdict: accept');
    expect(asked.stdout).toContain("nothing written (--save writes the descriptor into the cartridge's SAVE zone)");
    expect(saveDigest(accepted)).toBe(untouched);
    const ok = await runAcx(['handshake', accepted, '--registry', base.registry, '--save', '--json'], env);
    expect(ok.code, ok.stderr).toBe(0);
    const descriptor = JSON.parse(ok.stdout);
    expect(descriptor).toMatchObject({ verdict: 'accept', protocolRevision: '2025-11-25', model: { toolUse: true, contextWindowTokens: 128000 } });
    expect(descriptor.bindings.filter((b: { tier: string }) => b.tier === 'required').map((b: { boundTool: string }) => b.boundTool)).toEqual([
      'execute',
      'dispatch',
      'add_memory',
      'search_memory',
    ]);
    expect(JSON.parse(readSaved(accepted))).toEqual(descriptor);

    const refusedFile = copyOf(refusing.path, 'handshake-refuse');
    const before = saveDigest(refusedFile);
    const refused = await runAcx(['handshake', refusedFile, '--registry', refusing.registry], env);
    expect(refused.code).toBe(EXIT.refused);
    expect(refused.stdout).toContain('FAIL acx:deploy -> unbound');
    expect(JSON.parse(lastLine(refused.stderr))).toMatchObject({ code: -32602, data: { unmet: ['tool:acx:deploy'] } });
    expect(saveDigest(refusedFile)).toBe(before);
  });

  it('the preflight refuses to activate when the persisted descriptor shows an unsatisfied required binding', async () => {
    const server = await modelServer();
    const file = copyOf(base.path, 'preflight');
    const env = localModelEnv(join(root, 'preflight'), server.openaiBaseURL);
    expect((await runAcx(['handshake', file, '--registry', base.registry, '--save'], env)).code).toBe(0);
    const descriptor = JSON.parse(readSaved(file));
    descriptor.bindings.find((b: { role: string }) => b.role === 'acx:dispatch').satisfied = false;
    withSaveZone(file, (save) => save.putComplianceDescriptor(descriptor));
    const before = saveDigest(file);
    const run = await runAcx(['run', file, 'hello', '--registry', base.registry], env);
    expect(run.code).toBe(EXIT.refused);
    expect(run.stderr).toContain('preflight self-check');
    expect(run.stderr).toContain('required role acx:dispatch is not satisfied');
    expect(saveDigest(file)).toBe(before);
    expect(server.requests).toHaveLength(0);
  });
});

function readSaved(file: string): string {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const row = db.prepare("SELECT data FROM sqlar WHERE name='save/compliance/harness-compliance.json'").get() as { data: Uint8Array } | undefined;
    return row ? Buffer.from(row.data).toString('utf8') : '';
  } finally {
    db.close();
  }
}

// The committed example must stay pristine: tests run copies.
it('the committed example cartridge has an empty SAVE zone and verifies with the shipped registry', () => {
  expect(saveRows(EXAMPLE)).toEqual({ memory: [], files: [] });
  expect(verifyCartridge(EXAMPLE, { registry: EXAMPLE_REGISTRY }).verdict).toBe('trusted');
  expect(readFileSync(EXAMPLE_REGISTRY, 'utf8')).not.toMatch(/PRIVATE KEY/);
});
