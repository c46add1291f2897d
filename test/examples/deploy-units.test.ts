// The systemd units shipped in examples/deploy/: valid for systemd (`systemd-analyze verify`, where
// systemd is installed), running acx as an ordinary user under hardening, reading secrets only
// from a root-owned mode-0600 EnvironmentFile (checked before start), and naming only flags the
// acx commands they run really take.
import { spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACX_BIN, ROOT, runAcx, tempDir } from '../support/cli.ts';

const DEPLOY = join(ROOT, 'examples/deploy');
const SERVICES = ['acx-router.service', 'acx-worker.service', 'acx-cleanup@.service'];
const INSTALLED_ACX = '/usr/local/bin/acx';

const systemdAnalyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const SYSTEMD_SKIP = systemdAnalyze.status === 0 ? '' : ' (skipped: systemd-analyze is not installed here; install Debian\'s systemd package to run it)';

/** `Key=value` lines of a unit, in order (comments and section headers left out). */
function settings(file: string): Array<[string, string]> {
  return readFileSync(join(DEPLOY, file), 'utf8')
    .split('\n')
    .filter((line) => /^[A-Za-z]+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
}
const value = (file: string, key: string) => settings(file).find(([name]) => name === key)?.[1];

describe('examples/deploy: systemd units', () => {
  it('the directory ships a router service, a worker service and a cleanup timer with its service', () => {
    expect(readdirSync(DEPLOY).filter((file) => /\.(service|timer)$/.test(file)).sort()).toEqual(['acx-cleanup@.service', 'acx-cleanup@.timer', 'acx-router.service', 'acx-worker.service']);
  });

  (SYSTEMD_SKIP ? it.skip : it)(`systemd-analyze verify finds nothing to say about them${SYSTEMD_SKIP}`, () => {
    // Verify checks that the program exists: the units name the installed acx; here it is this checkout's.
    const dir = tempDir('acx-deploy-units-');
    for (const file of readdirSync(DEPLOY).filter((name) => /\.(service|timer)$/.test(name))) {
      writeFileSync(join(dir, file), readFileSync(join(DEPLOY, file), 'utf8').replaceAll(INSTALLED_ACX, ACX_BIN));
    }
    const run = spawnSync('systemd-analyze', ['verify', ...['acx-router.service', 'acx-worker.service', 'acx-cleanup@nova.service', 'acx-cleanup@nova.timer'].map((unit) => join(dir, unit))], { encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('each service runs acx as the ordinary user acx, hardened, with its secrets only in a root-owned 0600 EnvironmentFile', () => {
    for (const file of SERVICES) {
      expect([file, value(file, 'User'), value(file, 'Group')]).toEqual([file, 'acx', 'acx']);
      for (const [key, expected] of [
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['ProtectHome', 'read-only'],
        ['PrivateTmp', 'yes'],
        ['PrivateDevices', 'yes'],
        ['RestrictSUIDSGID', 'yes'],
        ['CapabilityBoundingSet', ''],
        ['AmbientCapabilities', ''],
        ['UMask', '0077'],
      ]) {
        expect([file, key, value(file, key!)]).toEqual([file, key, expected]);
      }
      const envFile = value(file, 'EnvironmentFile')!;
      expect(envFile).toMatch(/^\/etc\/acx\/[\w%-]+\.env$/);
      expect(value(file, 'ExecStartPre')).toContain(envFile);
      // No secret is written into the unit itself (units are world-readable).
      const inline = settings(file).filter(([key]) => key === 'Environment').map(([, text]) => text);
      expect([file, inline.filter((text) => /TOKEN|SECRET|KEY|PASSWORD|postgres:\/\//i.test(text))]).toEqual([file, []]);
    }
    expect(value('acx-cleanup@.timer', 'OnCalendar')).toBe('*:0/30');
  });

  it('a service will not start while its EnvironmentFile is readable by anyone but root (the ExecStartPre check, run as systemd would)', () => {
    const dir = tempDir('acx-deploy-env-');
    const envFile = join(dir, 'router.env');
    writeFileSync(envFile, 'BASECRADLE_TOKEN_NOVA=bc_uat_secret\n');
    // systemd's unescaping: %% → %, $$ → $; the `+` (run with full privileges) and /bin/sh -c '…' are systemd's.
    const line = value('acx-router.service', 'ExecStartPre')!;
    const script = /^\+\/bin\/sh -c '(.*)'$/.exec(line)![1]!.replaceAll('%%', '%').replaceAll('$$', '$').replaceAll('/etc/acx/router.env', envFile);
    const check = () => spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
    chmodSync(envFile, 0o644);
    expect(check()).toMatchObject({ status: 1, stderr: `${envFile} holds secrets: chown root and chmod 600 it\n` });
    chmodSync(envFile, 0o600);
    // Root-owned and 0600 passes; a file of any other owner is refused whatever its mode.
    const root = process.getuid?.() === 0;
    expect(check().status).toBe(root ? 0 : 1);
  });

  it('the commands they run take the flags they give (checked against this acx)', async () => {
    for (const file of [...SERVICES]) {
      const exec = value(file, 'ExecStart')!;
      expect(exec.startsWith(`${INSTALLED_ACX} `)).toBe(true);
      const [command, ...rest] = exec.slice(INSTALLED_ACX.length + 1).split(' ');
      const help = await runAcx([command!, '--help']);
      expect(help.status).toBe(0);
      for (const flag of rest.filter((word) => word.startsWith('--'))) expect([file, flag, help.stdout.includes(`${flag} `)]).toEqual([file, flag, true]);
    }
  });
});

