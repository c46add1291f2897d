import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecuteTool, describeExecute, Sandbox, type ExecuteOptions } from '../../src/tools/builtin/execute.ts';
import { Policy, processIsRoot } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { detectIsolation, findExecutable, probeIsolation, type IsolationKind } from '../../src/tools/sandbox/isolation.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { processAlive, tempDir, toolContext, removeTempDirs } from './helpers.ts';
import { waitFor } from '../support/wait.ts';

afterAll(removeTempDirs);

const detected = await detectIsolation();
/** Why each OS isolation cannot run here (undefined: it works), for visible skips. */
const unavailable: Record<'bwrap' | 'unshare', string | undefined> = { bwrap: undefined, unshare: undefined };
for (const kind of ['bwrap', 'unshare'] as const) {
  const info = await probeIsolation(kind);
  unavailable[kind] = info.kind === kind ? undefined : info.reason;
}
const isRoot = processIsRoot();
const perl = findExecutable('perl');
// As root without OS isolation only the unlocked profile may run; every mode is listed, and one
// that cannot run here is skipped with the reason in its title.
const modes: Array<{ isolation: IsolationKind; profile: 'locked' | 'unlocked'; skip: string | undefined }> = [
  { isolation: 'none', profile: 'unlocked', skip: undefined },
  ...(['bwrap', 'unshare'] as const).map((isolation) => ({ isolation, profile: 'locked' as const, skip: unavailable[isolation] })),
];
const isolated = modes.filter((mode) => mode.isolation !== 'none');

/** A describe title that says why it is skipped, when it is. */
function titled(title: string, skip: string | undefined): string {
  return skip ? `${title} (skipped: ${skip})` : title;
}

function sandbox(options: Partial<ExecuteOptions> & { isolation: IsolationKind }): Sandbox {
  return new Sandbox({ workspace: tempDir('acx-exec-ws-'), ...options });
}

/**
 * Waits until no host process runs with `marker` in its command line (the kernel tears down a
 * pid namespace asynchronously), giving up after a generous bound; returns what is left.
 */
async function survivors(marker: string): Promise<number[]> {
  await waitFor('the processes to be gone', () => processesWith(marker).length === 0, { withinMs: 5000, everyMs: 20 }).catch(() => {});
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

// CI installs bubblewrap: where it is installed, detection must pick it. A break in bwrap's
// probe (its network denial, say) must fail here, not quietly turn the isolation tests into skips.
it.skipIf(!findExecutable('bwrap'))(titled('picks bubblewrap when it is installed', findExecutable('bwrap') ? undefined : 'bwrap is not installed'), () => {
  expect(detected, detected.reason).toMatchObject({ kind: 'bwrap' });
});

it('reports which isolation is active and why', () => {
  expect(['bwrap', 'unshare', 'none']).toContain(detected.kind);
  expect(detected.reason.length).toBeGreaterThan(0);
  if (detected.kind !== 'none') expect(detected.reason).toMatch(/no network, read-only system, writable workspace, uid 65534/);
});

for (const { isolation, profile, skip } of modes) describe.skipIf(skip !== undefined)(titled(`execute with isolation=${isolation}`, skip), () => {
  it('runs in the workspace as its working directory', async () => {
    const box = sandbox({ isolation, profile });
    const result = await box.run({ command: 'pwd; echo made > made.txt' });
    expect(result.exitCode).toBe(0);
    expect(result.isolation).toBe(isolation);
    expect(result.stdout.text.trim()).toBe(box.workspace);
    expect(fs.readFileSync(path.join(box.workspace, 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('removes its call folder, even one the command made unreadable, and keeps the result', async () => {
    // The call folder lives in TMPDIR; a fresh one per test shows exactly what is left behind.
    const workspace = tempDir('acx-exec-ws-');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tempDir('acx-exec-tmp-');
    try {
      const context = toolContext();
      const tool = createExecuteTool({ workspace, isolation, profile });
      const output = await tool.execute!({ command: 'mkdir -p "$HOME/locked/deep" && touch "$HOME/locked/deep/f" && chmod 000 "$HOME/locked" && echo answer' }, context);
      expect(output).toBe('Exit code: 0\n--- stdout ---\nanswer');
      expect(fs.readdirSync(process.env.TMPDIR).filter((name) => name.startsWith('acx-exec-'))).toEqual([]);
      expect(context.logger.lines.join('\n')).not.toMatch(/cleanup failed/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
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
      expect(env.HOME).toMatch(/acx-exec-\w+\/home$/);
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

for (const { isolation, skip } of isolated) describe.skipIf(skip !== undefined)(titled(`OS isolation ${isolation}`, skip), () => {
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

  it('does not see files in the host /tmp outside the workspace', async () => {
    const secret = path.join(os.tmpdir(), `acx-host-secret-${process.pid}`);
    fs.writeFileSync(secret, 'host secret');
    try {
      const result = await sandbox({ isolation }).run({ command: `cat ${secret} 2>&1 || true` });
      expect(result.stdout.text).not.toContain('host secret');
    } finally {
      fs.rmSync(secret, { force: true });
    }
  });

  it('runs the command as uid 65534, with no capabilities', async () => {
    const result = await sandbox({ isolation }).run({ command: "id -u; id -g; grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status" });
    expect(result.stdout.text).toBe('65534\n65534\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n');
  });

  it.skipIf(!isRoot)(titled('cannot read /etc/shadow or any other root-only file in /etc, though acx runs as root', isRoot ? undefined : 'the attack needs acx to run as root'), async () => {
    const result = await sandbox({ isolation }).run({
      command: 'head -c 64 /etc/shadow; echo "exit $?"; find /etc ! -type l ! -perm -o=r -readable 2>/dev/null',
    });
    expect(result.stdout.text).toBe('exit 1\n');
    expect(result.stderr.text).toBe("head: cannot open '/etc/shadow' for reading: Permission denied\n");
  });

  it.skipIf(!isRoot)(titled('cannot change a kernel setting through /proc/sys, though acx runs as root', isRoot ? undefined : 'the attack needs acx to run as root'), async () => {
    // uid 0 may write sysctls without any capability (kernel.core_pattern runs code on the host); a same-value write is harmless.
    const result = await sandbox({ isolation }).run({ command: 'cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness && echo CHANGED; echo done' });
    expect(result.stdout.text).toBe('done\n');
    expect(result.stderr.text).toMatch(/\/proc\/sys\/vm\/swappiness: Read-only file system/);
  });

  it.skipIf(!perl)(titled('cannot connect to a unix socket listening outside the workspace', perl ? undefined : 'needs perl as the socket client'), async () => {
    const box = sandbox({ isolation });
    const sockets = [path.join(box.workspace, 'inside.sock'), path.join(tempDir('acx-sock-'), 'host.sock')];
    // /var/tmp is on the host's disk, outside every tmpfs the old sandboxes put over /tmp.
    if (fs.existsSync('/var/tmp')) sockets.push(path.join(fs.mkdtempSync('/var/tmp/acx-sock-'), 'host.sock'));
    const accepted = new Map<string, number>();
    const servers = await Promise.all(
      sockets.map(
        (socketPath) =>
          new Promise<net.Server>((resolve) => {
            const server = net.createServer((connection) => {
              accepted.set(socketPath, (accepted.get(socketPath) ?? 0) + 1);
              connection.end();
            });
            server.listen(socketPath, () => resolve(server));
          }),
      ),
    );
    const client = `perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die; print connect($s, pack_sockaddr_un($ARGV[0])) ? "connected\\n" : "refused: $!\\n"'`;
    try {
      const result = await box.run({ command: sockets.map((socketPath) => `${client} ${socketPath}`).join('; ') });
      expect(result.stdout.text.trim().split('\n')).toEqual(['connected', ...sockets.slice(1).map(() => 'refused: No such file or directory')]);
      await waitFor('the first socket never saw its connection accepted', () => accepted.has(sockets[0]!), { withinMs: 5000, everyMs: 10 }); // the accept event lands
      expect(sockets.map((socketPath) => accepted.get(socketPath) ?? 0)).toEqual([1, ...sockets.slice(1).map(() => 0)]);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      for (const socketPath of sockets.slice(2)) fs.rmSync(path.dirname(socketPath), { recursive: true, force: true });
    }
  });

  it("sees nothing else of the host: not /root, /home, /var, /opt, another agent's state or the host's /run; /dev/shm is its own", async () => {
    const agents = tempDir('acx-agents-');
    const workspace = path.join(agents, 'mine', 'workspace');
    fs.mkdirSync(workspace, { recursive: true });
    fs.mkdirSync(path.join(agents, 'other'));
    fs.writeFileSync(path.join(agents, 'other', 'state.txt'), 'other agent');
    const shm = `/dev/shm/acx-sandbox-${process.pid}`;
    try {
      const result = await new Sandbox({ workspace, isolation }).run({
        command: [
          `cat ${path.join(agents, 'other', 'state.txt')} 2>/dev/null`,
          'for p in /root /home /var/lib /var/cache /opt /srv /mnt; do if [ -e $p ]; then echo "visible $p"; fi; done',
          'ls -A /run /var/run /var/tmp',
          `echo persisted > ${shm}`,
        ].join('; '),
      });
      expect(result.exitCode).toBe(0);
      expect(result.stdout.text).toBe('/run:\n\n/var/run:\n\n/var/tmp:\n');
      expect(fs.existsSync(shm)).toBe(false);
    } finally {
      fs.rmSync(shm, { force: true }); // only there when the sandbox leaked it
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

describe('without OS isolation (the explicit opt-in)', () => {
  it('kills what left the process group or the session when the call ends', async () => {
    const marker = `${5000 + Math.floor(Math.random() * 1000)}.${process.pid}`;
    const box = sandbox({ isolation: 'none', profile: 'unlocked' });
    const session = "cut -d' ' -f6 /proc/$1/stat";
    const escapes = [
      // setsid: a new session and group (found by the call's marker in its environment)
      `setsid sleep ${marker} > /dev/null 2>&1 & echo $! > setsid.pid`,
      // setpgid with a cleared environment: a new group in the same session, no marker (found by its session)
      ...(perl ? [`env -i ${perl} -e 'setpgrp(0, 0); exec "/bin/sleep", "${marker}"' > /dev/null 2>&1 & echo $! > setpgid.pid`] : []),
    ];
    const result = await box.run({
      command: `${escapes.join('; ')}; sleep 0.3; session() { ${session}; }; for f in *.pid; do [ "$(session $(cat $f))" != "$(session $$)" ] && echo "$f left the session"; done; echo started`,
    });
    expect(result.stdout.text).toBe('setsid.pid left the session\nstarted\n');
    expect(await survivors(`sleep ${marker}`)).toEqual([]);
  });

  it('says plainly in its description what a command can reach', () => {
    const description = createExecuteTool({ workspace: tempDir(), isolation: 'none', profile: 'unlocked' }).description;
    expect(description).toMatch(/WITHOUT OS isolation: the command runs on the host as \S+, with network access, and can read every file/);
    expect(description).toContain("acx's own environment (/proc/$PPID/environ) with the model API keys in it");
    expect(description).not.toMatch(/^[^.]*no credentials in (the|its) environment/);
    for (const kind of ['bwrap', 'unshare'] as const) {
      expect(describeExecute(kind)).toMatch(new RegExp(`isolated by ${kind}: no network, as an unprivileged user \\(uid 65534\\)`));
    }
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
