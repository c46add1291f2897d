import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecuteTool, Sandbox, type ExecuteOptions } from '../../src/tools/builtin/execute.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { detectIsolation, probeIsolation, type IsolationKind } from '../../src/tools/sandbox/isolation.ts';
import { PolicyError } from '../../src/util/errors.ts';
import { processAlive, tempDir, toolContext, removeTempDirs } from './helpers.ts';

afterAll(removeTempDirs);

const detected = await detectIsolation();
const working: IsolationKind[] = [];
for (const kind of ['bwrap', 'unshare'] as const) {
  if ((await probeIsolation(kind)).kind === kind) working.push(kind);
}
// As root without OS isolation only the unlocked profile may run; every mode is exercised.
const modes: Array<{ isolation: IsolationKind; profile: 'locked' | 'unlocked' }> = [
  { isolation: 'none', profile: 'unlocked' },
  ...working.map((isolation) => ({ isolation, profile: 'locked' as const })),
];

function sandbox(options: Partial<ExecuteOptions> & { isolation: IsolationKind }): Sandbox {
  return new Sandbox({ workspace: tempDir('acx-exec-ws-'), ...options });
}

/**
 * Waits until no host process runs with `marker` in its command line (the kernel tears down a
 * pid namespace asynchronously), giving up after a generous bound; returns what is left.
 */
async function survivors(marker: string): Promise<number[]> {
  for (let i = 0; i < 250; i++) {
    const left = processesWith(marker);
    if (left.length === 0) return left;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return processesWith(marker);
}

/** Host processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(marker) && processAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

it('reports which isolation is active and why', () => {
  expect(['bwrap', 'unshare', 'none']).toContain(detected.kind);
  expect(detected.reason.length).toBeGreaterThan(0);
  if (detected.kind !== 'none') expect(detected.reason).toMatch(/no network, read-only system, writable workspace/);
});

describe.each(modes)('execute with isolation=$isolation', ({ isolation, profile }) => {
  it('runs in the workspace as its working directory', async () => {
    const box = sandbox({ isolation, profile });
    const result = await box.run({ command: 'pwd; echo made > made.txt' });
    expect(result.exitCode).toBe(0);
    expect(result.isolation).toBe(isolation);
    expect(result.stdout.text.trim()).toBe(box.workspace);
    expect(fs.readFileSync(path.join(box.workspace, 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('sees no credentials in its environment and a private HOME', async () => {
    const saved = { ...process.env };
    process.env.OPENAI_API_KEY = 'sk-test-leak-aaaaaaaaaaaaaaaaaaaa';
    process.env.GITHUB_TOKEN = 'ghp_leakleakleakleakleakleakleakleakleak';
    process.env.DB_PASSWORD = 'hunter2';
    process.env.AWS_SECRET_ACCESS_KEY = 'leak';
    try {
      const box = sandbox({ isolation, profile, env: { FOO: 'bar', MY_TOKEN: 'leak', SERVICE_KEY: 'leak' } });
      const result = await box.run({ command: 'env' });
      const env = Object.fromEntries(
        result.stdout.text
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      expect(result.stdout.text).not.toContain('leak');
      expect(result.stdout.text).not.toContain('hunter2');
      expect(Object.keys(env).filter((name) => /KEY|TOKEN|SECRET|PASSWORD/.test(name))).toEqual([]);
      expect(env.FOO).toBe('bar');
      expect(env.PATH).toBeTruthy();
      expect(env.HOME).toMatch(/acx-exec-home-/);
      expect(env.HOME).not.toBe(os.homedir());
    } finally {
      process.env = saved;
    }
  });

  it('passes stdin', async () => {
    const result = await sandbox({ isolation, profile }).run({ command: 'tr a-z A-Z', stdin: 'hello' });
    expect(result.stdout.text).toBe('HELLO');
  });

  it('kills the whole process group on timeout, grandchildren included', async () => {
    const marker = `${1000 + Math.floor(Math.random() * 1000)}.${process.pid}`;
    const box = sandbox({ isolation, profile });
    const result = await box.run({
      command: `sleep ${marker} & echo $! > grandchild.pid; echo started; wait`,
      timeoutMs: 1500, // generous: the unshare wrapper needs a moment to set up its mounts
    });
    expect(result.timedOut).toBe(true);
    expect(result.stdout.text).toContain('started');
    expect(await survivors(`sleep ${marker}`)).toEqual([]);
    if (isolation === 'none') {
      const pid = Number(fs.readFileSync(path.join(box.workspace, 'grandchild.pid'), 'utf8'));
      expect(processAlive(pid)).toBe(false);
    }
  });

  it('kills background processes left behind when the command exits', async () => {
    const marker = `${2000 + Math.floor(Math.random() * 1000)}.${process.pid}`;
    const result = await sandbox({ isolation, profile }).run({ command: `sleep ${marker} > /dev/null 2>&1 & echo bye` });
    expect(result.exitCode).toBe(0);
    expect(await survivors(`sleep ${marker}`)).toEqual([]);
  });

  it('kills the process group when the turn is cancelled', async () => {
    const marker = `${3000 + Math.floor(Math.random() * 1000)}.${process.pid}`;
    const box = sandbox({ isolation, profile });
    const controller = new AbortController();
    const running = box.run({ command: `sleep ${marker} & touch started; wait` }, controller.signal);
    while (!fs.existsSync(path.join(box.workspace, 'started'))) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const result = await running;
    expect(result.aborted).toBe(true);
    expect(await survivors(`sleep ${marker}`)).toEqual([]);
  });

  it('keeps the head and tail of long output', async () => {
    const result = await sandbox({ isolation, profile, maxOutputBytes: 1000 }).run({ command: 'seq 1 100000' });
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout.totalBytes).toBe(588895);
    expect(result.stdout.text.startsWith('1\n2\n3\n')).toBe(true);
    expect(result.stdout.text.endsWith('99999\n100000\n')).toBe(true);
    expect(result.stdout.text).toMatch(/\[… 58789\d bytes of output omitted …\]/);
    expect(result.stdout.text).not.toContain('\n50000\n');
  });
});

describe.each(working.map((isolation) => ({ isolation })))('OS isolation $isolation', ({ isolation }) => {
  let server: http.Server;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('has no network (cannot reach a server on the host loopback)', async () => {
    const result = await sandbox({ isolation }).run({
      command: `if command -v bash >/dev/null; then bash -c 'echo GET / > /dev/tcp/127.0.0.1/${port}' && echo connected; fi; cat /proc/net/dev`,
    });
    expect(result.stdout.text).not.toContain('connected');
    expect(result.stdout.text).not.toMatch(/eth\d|ens\d|enp/);
  });

  it('cannot write the system, only the workspace', async () => {
    const box = sandbox({ isolation });
    const result = await box.run({ command: 'touch /usr/acx-escape 2>&1; echo x > /etc/acx-escape 2>&1; echo ok > inside.txt' });
    expect(fs.existsSync('/usr/acx-escape')).toBe(false);
    expect(fs.existsSync('/etc/acx-escape')).toBe(false);
    expect(result.stdout.text).toMatch(/Read-only file system/);
    expect(fs.readFileSync(path.join(box.workspace, 'inside.txt'), 'utf8')).toBe('ok\n');
  });

  it('cannot remount the system read-write, even when started by root', async () => {
    const result = await sandbox({ isolation }).run({
      command: 'mount -o remount,bind,rw / 2>/dev/null && echo REMOUNTED; touch /usr/acx-escape 2>/dev/null && echo WROTE; echo done',
    });
    expect(result.stdout.text).toBe('done\n');
    expect(fs.existsSync('/usr/acx-escape')).toBe(false);
  });

  it('does not see files in the host /tmp outside the workspace (bwrap)', async () => {
    if (isolation !== 'bwrap') return;
    const secret = path.join(os.tmpdir(), `acx-host-secret-${process.pid}`);
    fs.writeFileSync(secret, 'host secret');
    try {
      const result = await sandbox({ isolation }).run({ command: `cat ${secret} 2>&1 || true` });
      expect(result.stdout.text).not.toContain('host secret');
    } finally {
      fs.rmSync(secret, { force: true });
    }
  });
});

describe('root without OS isolation', () => {
  it('is refused under the locked profile, with the reason', async () => {
    const box = sandbox({ isolation: 'none', profile: 'locked', isRoot: () => true });
    await expect(box.run({ command: 'true' })).rejects.toThrow(PolicyError);
    await expect(box.run({ command: 'true' })).rejects.toThrow(/Refusing to run a command as root without OS isolation/);
  });

  it('comes back to the model as a tool error through the registry', async () => {
    const registry = new ToolRegistry({ policy: Policy.locked() });
    registry.register(createExecuteTool({ workspace: tempDir(), isolation: 'none', profile: 'locked', isRoot: () => true }));
    const run = await registry.run('execute', { command: 'id' }, toolContext());
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/as root without OS isolation/);
  });

  it('runs when the profile is unlocked', async () => {
    const result = await sandbox({ isolation: 'none', profile: 'unlocked', isRoot: () => true }).run({ command: 'echo fine' });
    expect(result.stdout.text).toBe('fine\n');
  });
});

it('the execute tool formats a run for the model', async () => {
  const registry = new ToolRegistry().register(createExecuteTool({ workspace: tempDir(), isolation: 'none', profile: 'unlocked' }));
  const run = await registry.run('execute', { command: 'echo out; echo err >&2; exit 3' }, toolContext());
  expect(run).toEqual({ ok: true, output: 'Exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr' });
  const invalid = await registry.run('execute', { cmd: 'ls' }, toolContext());
  expect(invalid.ok).toBe(false);
  expect(invalid.output).toMatch(/Invalid arguments for execute: \/command/);
});
