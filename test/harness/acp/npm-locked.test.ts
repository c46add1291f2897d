// The npm-locked source: a package.json + pnpm-lock.yaml (committed under
// test/fixtures/acp/npm-locked/, generated once with pnpm 9.15.9; it depends on semver, a tiny
// package with a bin) installed with `pnpm install --frozen-lockfile`. pnpm is not on this
// machine, so the bootstrap runs the pinned pnpm through npx. This test needs the npm registry;
// when it is unreachable it fails at once with a message saying so.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrap, bootstrapDir, bootstrapIdentity, pnpmCommand, PINNED_PNPM_VERSION } from '../../../src/harness/acp/bootstrap.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { AcxError } from '../../../src/core/errors.ts';
import { tempCache } from './fake-profile.ts';
import { scaled } from '../../support/time-scale.ts';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/acp/npm-locked');
const packageJson = fs.readFileSync(path.join(FIXTURE, 'package.json'), 'utf8');
const pnpmLockYaml = fs.readFileSync(path.join(FIXTURE, 'pnpm-lock.yaml'), 'utf8');
const REGISTRY = 'https://registry.npmjs.org/';

const cache = tempCache();
afterAll(() => fs.rmSync(cache, { recursive: true, force: true }));

beforeAll(async () => {
  try {
    const response = await fetch(`${REGISTRY}semver`, { method: 'HEAD', signal: AbortSignal.timeout(15_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  } catch (error) {
    throw new Error(`The npm registry (${REGISTRY}) is unreachable from this machine (${(error as Error).message}); the npm-locked bootstrap test needs it to fetch pnpm and semver.`);
  }
});

function lockedProfile(overrides: Partial<ACPSettings> = {}): ACPSettings {
  return {
    harnessId: 'locked-semver',
    source: { type: 'npm-locked', packageJson, pnpmLockYaml },
    executable: 'semver',
    modelMapping: { type: 'session-config-option', path: 'model' },
    cacheDir: cache,
    progress: null,
    hostEnv: {},
    ...overrides,
  };
}

describe('npm-locked source', () => {
  it('falls back to the pinned pnpm through npx when pnpm is not on PATH', () => {
    // A PATH with npx's directory but no pnpm (pnpm is not installed on this machine).
    const npxDir = path.dirname(execFileSync('sh', ['-c', 'command -v npx'], { encoding: 'utf8' }).trim());
    expect(fs.existsSync(path.join(npxDir, 'pnpm'))).toBe(false);
    const fallback = pnpmCommand(npxDir);
    expect(fallback.args).toEqual(['--yes', `pnpm@${PINNED_PNPM_VERSION}`]);
    expect(path.basename(fallback.command)).toBe('npx');
  });

  it('installs the locked project frozen, launches its bin, and reuses the bootstrap', { timeout: scaled(180_000) }, async () => {
    const harness = createACP(lockedProfile());
    const first = await harness.bootstrap();
    expect(first.installed).toBe(true);
    expect(first.dir).toBe(bootstrapDir(cache, 'locked-semver'));
    const impl = path.join(first.dir, 'implementation');
    // Exactly the locked version was installed, and the lockfile was not rewritten.
    expect(JSON.parse(fs.readFileSync(path.join(impl, 'node_modules/semver/package.json'), 'utf8')).version).toBe('7.7.2');
    expect(fs.readFileSync(path.join(impl, 'pnpm-lock.yaml'), 'utf8')).toBe(pnpmLockYaml);
    expect(first.executable).toBe(path.join(impl, 'node_modules/.bin/semver'));
    expect(execFileSync(first.executable, ['1.2.3', '-r', '>=1.0.0'], { encoding: 'utf8' }).trim()).toBe('1.2.3');
    expect(JSON.parse(fs.readFileSync(path.join(first.dir, '.bootstrap-complete.json'), 'utf8')).identity).toBe(first.identity);

    // A new harness over the same recipe reuses it.
    const again = await createACP(lockedProfile()).bootstrap();
    expect(again).toMatchObject({ installed: false, identity: first.identity, executable: first.executable });
  });

  it('a lockfile that does not match package.json fails the frozen install clearly', { timeout: scaled(180_000) }, async () => {
    const drifted = packageJson.replace('"semver": "7.7.2"', '"semver": "7.7.1"');
    const error = await createACP(lockedProfile({ harnessId: 'locked-drift', source: { type: 'npm-locked', packageJson: drifted, pnpmLockYaml } }))
      .bootstrap()
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(AcxError);
    expect((error as AcxError).code).toBe('acp-bootstrap-failed');
    expect((error as AcxError).message).toMatch(/installing the locked pnpm project failed/);
    expect((error as AcxError).message).toMatch(/frozen|lockfile|ERR_PNPM_OUTDATED_LOCKFILE/i);
    expect(fs.existsSync(path.join(bootstrapDir(cache, 'locked-drift'), '.bootstrap-complete.json'))).toBe(false);
  });

  it('identity: the lockfile and workspace file take part, credentials never do', () => {
    const base = lockedProfile();
    const id = bootstrapIdentity(base);
    expect(id).toMatch(/^sha256:[0-9a-f]{64}$/);
    const otherLock = bootstrapIdentity({ ...base, source: { type: 'npm-locked', packageJson, pnpmLockYaml: pnpmLockYaml.replace('7.7.2', '7.7.1') } });
    expect(otherLock).not.toBe(id);
    const withWorkspace = bootstrapIdentity({ ...base, source: { type: 'npm-locked', packageJson, pnpmLockYaml, pnpmWorkspaceYaml: 'packages: []\n' } });
    expect(withWorkspace).not.toBe(id);
    const withCredentials = bootstrapIdentity({ ...base, credentialEnv: ['SEMVER_TOKEN'], hostEnv: { SEMVER_TOKEN: 'real-secret' }, forwardEnv: ['HOME'] } as ACPSettings);
    expect(withCredentials).toBe(id);
    const recipe = fs.readFileSync(path.join(bootstrapDir(cache, 'locked-semver'), 'recipe.json'), 'utf8');
    expect(recipe).toContain('lockfileVersion');
    expect(recipe).not.toContain('real-secret');
  });

  it('an unreachable registry fails the install with a clear error instead of hanging', { timeout: scaled(120_000) }, async () => {
    const settings = lockedProfile({ harnessId: 'locked-offline' });
    const error = await bootstrap(settings, {
      cacheDir: cache,
      progress: null,
      // A loopback port nothing listens on; no retries so the failure is immediate.
      installEnv: { npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0' },
    }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(AcxError);
    expect((error as AcxError).code).toBe('acp-bootstrap-failed');
    expect((error as AcxError).describe()).toMatch(/registry/);
    expect(fs.existsSync(path.join(bootstrapDir(cache, 'locked-offline'), '.bootstrap-complete.json'))).toBe(false);
  });
});
