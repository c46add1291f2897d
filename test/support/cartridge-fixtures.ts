// Shared fixtures for the cartridge boot tests (test/app, test/e2e/cartridge-*) and the example
// build script: an agent directory to pack, a signing key that never touches disk, a trust
// registry holding only its public key, a digest of a cartridge's SAVE zone, and the CLI.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { generateSigningKey, type SigningKey } from '../../src/cartridge/keys.ts';
import { TRUST_REGISTRY_SCHEMA, type TrustRegistry } from '../../src/cartridge/trust.ts';
import { cleanEnv } from './cli.ts';

export const ROOT = resolve(import.meta.dirname, '../..');
export const EXAMPLE_AGENT = join(ROOT, 'examples/cartridges/notes-keeper');
export const PUBLISHER = 'dev.acx.examples';

export function tempDir(prefix = 'acx-boot-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** An acx.trust-registry/1 document that trusts `key` for `publisher` (public key only). */
export function trustRegistryFor(key: Pick<SigningKey, 'keyid' | 'publicKeyPem'>, publisher: string, now = new Date()): TrustRegistry {
  const years = (n: number) => new Date(Date.UTC(now.getUTCFullYear() + n, now.getUTCMonth(), now.getUTCDate())).toISOString();
  const root = publisher.split('/')[0]!;
  return {
    schemaVersion: TRUST_REGISTRY_SCHEMA,
    registryId: `${publisher}/example-registry`,
    updatedAt: now.toISOString(),
    keys: [
      {
        keyid: key.keyid,
        publisherId: publisher,
        algorithm: 'ed25519',
        publicKeyPem: key.publicKeyPem,
        status: 'active',
        notBefore: new Date(now.getTime() - 60_000).toISOString(),
        notAfter: years(5),
        namespaceProof: {
          method: 'dns-txt',
          txtRecord: `_acx-challenge.${root.split('.').reverse().join('.')}`,
          verifiedAt: new Date(now.getTime() - 60_000).toISOString(),
        },
      },
    ],
  };
}

export interface BuiltCartridge {
  path: string;
  registry: string;
  keyid: string;
  manifestHash: string;
  dir: string;
}

/**
 * Copies the example agent into `root`, applies `edit` (relative path → new content), packs and
 * signs it with a fresh in-memory key, and writes a registry trusting that key.
 */
export function buildTestCartridge(root: string, options: { name?: string; edit?: Record<string, string> } = {}): BuiltCartridge {
  const name = options.name ?? 'agent';
  const dir = join(root, `${name}-src`);
  cpSync(EXAMPLE_AGENT, dir, { recursive: true });
  for (const [rel, content] of Object.entries(options.edit ?? {})) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  const key = generateSigningKey();
  const path = join(root, `${name}.acx`);
  const built = buildCartridge({ dir, out: path, key, publisher: PUBLISHER });
  const registry = join(root, `${name}.trust-registry.json`);
  writeFileSync(registry, `${JSON.stringify(trustRegistryFor(key, PUBLISHER), null, 2)}\n`);
  return { path, registry, keyid: key.keyid, manifestHash: built.manifestHash, dir };
}

/** sha256 over everything in the SAVE zone (memory, files, objects, vectors, SAVE meta, the SAVE flag). */
export function saveDigest(path: string): string {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const hash = createHash('sha256');
    const dump = (sql: string) => hash.update(JSON.stringify(db.prepare(sql).all(), (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v)));
    dump("SELECT * FROM memory WHERE zone='save' ORDER BY id");
    dump("SELECT name, mode, mtime, sz, data FROM sqlar WHERE name NOT GLOB 'rom/*' ORDER BY name");
    dump("SELECT * FROM objects WHERE zone='save' ORDER BY oid");
    dump("SELECT * FROM vectors WHERE zone='save' ORDER BY memory_id");
    dump("SELECT * FROM cartridge WHERE key='acx.save_codebase_fingerprint'");
    dump('PRAGMA user_version');
    return hash.digest('hex');
  } finally {
    db.close();
  }
}

export function saveRows(path: string): { memory: Array<{ id: string; payload: string }>; files: string[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return {
      memory: db.prepare("SELECT id, payload FROM memory WHERE zone='save' ORDER BY id").all() as Array<{ id: string; payload: string }>,
      files: (db.prepare("SELECT name FROM sqlar WHERE name GLOB 'save/*' ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name),
    };
  } finally {
    db.close();
  }
}

/** A copy of cartridge `source` at `path`, changed by `mutate` through plain SQLite (an attacker's tools). */
export function alteredCopy(source: string, path: string, mutate: (db: DatabaseSync) => void = () => {}): string {
  copyFileSync(source, path);
  // The attacker's writer: newer node:sqlite opens defensively by default, which would refuse the
  // writable_schema edits some mutations need.
  const db = new DatabaseSync(path, { defensive: false } as ConstructorParameters<typeof DatabaseSync>[1]);
  try {
    mutate(db);
  } finally {
    db.close();
  }
  return path;
}

/** The signatures table, row by row. */
export function signatureRows(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare('SELECT * FROM signatures ORDER BY sig_id').all();
  } finally {
    db.close();
  }
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** This process's environment minus every model key, token, base URL and acx setting: a fresh machine. */
export function freshMachineEnv(): NodeJS.ProcessEnv {
  return cleanEnv();
}

/**
 * Runs `acx` as a user does: a real process (async, so an in-process model server can answer).
 * With `killAfterMs` a process that has not finished by then is killed (code -1, and stderr says
 * so): for tests of something that used to hang. `fresh` starts from freshMachineEnv() instead of
 * this process's environment.
 */
export function runAcx(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  options: { cwd?: string; input?: string; killAfterMs?: number; fresh?: boolean } = {},
): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/acx.js'), ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...(options.fresh ? freshMachineEnv() : process.env), ACX_LOG_LEVEL: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const timer = options.killAfterMs
      ? setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, options.killAfterMs)
      : undefined;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (killed) resolvePromise({ code: -1, stdout, stderr: `${stderr}[killed: still running after ${options.killAfterMs} ms]` });
      else resolvePromise({ code: code ?? 1, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Environment for a run against the local model server, isolated in `home`. */
export function localModelEnv(home: string, openaiBaseURL: string): NodeJS.ProcessEnv {
  return {
    ACX_HOME: join(home, 'state'),
    ACX_CONFIG_HOME: join(home, 'config'),
    OPENAI_API_KEY: 'sk-local-test',
    OPENAI_BASE_URL: openaiBaseURL,
    ACX_MODEL: 'openai:demo-model',
    ACX_TRUST_REGISTRY: '',
    ACX_ALLOW_PORTABLE: '',
  };
}
