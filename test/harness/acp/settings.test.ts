import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveGatewayEnv, selectAuth } from '../../../src/harness/acp/auth.ts';
import { bootstrap, bootstrapDir, bootstrapIdentity } from '../../../src/harness/acp/bootstrap.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { claudeCodeProfile, codexProfile, cursorProfile, geminiCliProfile, grokBuildProfile, opencodeProfile } from '../../../src/harness/acp/profiles/index.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { ConfigError, HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import { fakeInstallCommand, fakeProfile, tempCache } from './fake-profile.ts';

const base = fakeProfile(tempCache());

describe('createACP settings', () => {
  it('accepts every ready profile', () => {
    for (const profile of [claudeCodeProfile, codexProfile, cursorProfile, grokBuildProfile, geminiCliProfile, opencodeProfile]) {
      expect(() => createACP(profile as ACPSettings)).not.toThrow();
    }
  });

  const bad: Array<[string, Partial<ACPSettings>, RegExp]> = [
    ['harnessId', { harnessId: 'Not Kebab' }, /harnessId must be stable kebab-case/],
    ['packageVersion', { source: { type: 'npm-simple', packageName: 'x', packageVersion: '^1.0.0' } }, /must be an exact version/],
    ['packageName', { source: { type: 'npm-simple', packageName: 'Bad Name' } }, /not a valid npm package name/],
    ['locked json', { source: { type: 'npm-locked', packageJson: '{', pnpmLockYaml: 'x' } }, /not valid JSON/],
    ['install command', { source: { type: 'install-command', command: ' ' } }, /non-empty Bash command/],
    ['executable', { executable: '/usr/bin/agent' }, /bare command name/],
    ['forwardEnv credential', { forwardEnv: ['KEY'], credentialEnv: ['KEY'] }, /lists the credential KEY/],
    ['brokering without credentials', { credentialBrokering: () => [] }, /needs credentialEnv/],
    ['env credential', { credentialEnv: ['KEY'], env: { KEY: 'v' } }, /sets the credential KEY/],
    ['mcp reserved', { mcpServers: { acx: { command: 'x' } } }, /reserved name "acx"/],
    ['transport', { hostToolMcpTransport: 'ws' as never }, /must be 'stdio' or 'http'/],
    ['auth', { auth: 'magic' as never }, /auth is unknown/],
    ['gateway placeholder', { providerAuthentication: { gateway: { env: { K: { $source: 'nope' as never } } } } }, /unknown \$source/],
    ['model mapping', { modelMapping: { type: 'flag' as never, path: 'm' } }, /modelMapping.type is unknown/],
    ['model prefix', { modelMapping: { type: 'session-model', path: 'modelId', prefix: '' } }, /modelMapping.prefix must be a non-empty string/],
    ['skills dir', { skillsDirectory: '../outside' }, /relative path below \$HOME/],
    ['instruction path', { instructionMapping: { type: 'filesystem', path: '/etc/x' } }, /relative path below \$HOME/],
    ['permission mapping', { permissionModeMapping: { 'allow-reads': null, 'allow-edits': null } as never }, /missing 'allow-all'/],
    ['port', { port: 70000 }, /port must be an integer/],
    ['timeout', { startupTimeoutMs: 0 }, /positive number/],
    ['clientApp', { clientApp: { name: '', version: '1' } }, /clientApp must be/],
  ];
  for (const [name, override, message] of bad) {
    it(`rejects a bad ${name}`, () => {
      const error = (() => {
        try {
          createACP({ ...base, ...override } as ACPSettings);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
    });
  }

  it('refuses unsupported combinations with HarnessCapabilityUnsupportedError', () => {
    expect(() => createACP({ ...base, version: 'v2' as never })).toThrow(HarnessCapabilityUnsupportedError);
    expect(() => createACP({ ...base, auth: 'ai-gateway' })).toThrow(HarnessCapabilityUnsupportedError);
  });
});

describe('the OpenCode profile', () => {
  it('lists the model acx asks for beside its default, so OpenCode can select it as acx/<id>', () => {
    const files = opencodeProfile.homeFiles({ env: { OPENCODE_MODEL: 'house-default' }, home: '/h', model: 'acx/chosen' });
    const config = JSON.parse(files['.config/opencode/opencode.json']!);
    expect(config.model).toBe('acx/house-default');
    expect(Object.keys(config.provider.acx.models)).toEqual(['house-default', 'chosen']);
    expect(opencodeProfile.modelMapping).toEqual({ type: 'session-model', path: 'modelId', prefix: 'acx/' });
  });
});

describe('bootstrap lifecycle identity', () => {
  it('hashes the recipe: never credentials, an omitted npm version stays out', () => {
    const a = bootstrapIdentity({ ...base, source: { type: 'npm-simple', packageName: 'x' } });
    const b = bootstrapIdentity({ ...base, source: { type: 'npm-simple', packageName: 'x' }, credentialEnv: ['K'], hostEnv: { K: 'secret' } } as ACPSettings);
    const pinned = bootstrapIdentity({ ...base, source: { type: 'npm-simple', packageName: 'x', packageVersion: '1.0.0' } });
    expect(a).toBe(b);
    expect(a).not.toBe(pinned);
    expect(bootstrapIdentity({ ...base, env: { A: '1' } })).not.toBe(bootstrapIdentity({ ...base, env: { A: '2' } }));
  });

  it('installs once into .harness-bootstrap/<harnessId>, reuses it by marker, reinstalls on a new recipe', async () => {
    const cache = tempCache();
    const runs = join(cache, 'runs.log');
    const settings = fakeProfile(cache, { source: { type: 'install-command', command: fakeInstallCommand(runs) } });
    const first = await bootstrap(settings, { cacheDir: cache, progress: null });
    expect(first.installed).toBe(true);
    expect(first.dir).toBe(bootstrapDir(cache, 'fake-acp'));
    expect(first.executable).toBe(join(first.dir, 'implementation', 'home', '.local', 'bin', 'fake-acp'));
    expect(statSync(first.executable).mode & 0o111).not.toBe(0);
    const again = await bootstrap(settings, { cacheDir: cache, progress: null });
    expect(again.installed).toBe(false);
    expect(readFileSync(runs, 'utf8').trim().split('\n')).toHaveLength(1);
    const changed = await bootstrap({ ...settings, env: { EXTRA: '1' } }, { cacheDir: cache, progress: null });
    expect(changed.installed).toBe(true);
    expect(JSON.parse(readFileSync(join(changed.dir, 'env.json'), 'utf8'))).toEqual({ EXTRA: '1' });
  });

  it('fails clearly when the install command does not produce the executable, and shows progress', async () => {
    const cache = tempCache();
    const lines: string[] = [];
    const progress = { write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WritableStream;
    const settings = fakeProfile(cache, { source: { type: 'install-command', command: 'echo nothing' } });
    await expect(bootstrap(settings, { cacheDir: cache, progress })).rejects.toMatchObject({ code: 'acp-bootstrap-failed', hint: expect.stringContaining('into $HOME/.local/bin') });
    expect(lines[0]).toBe(`INFO acp install started harness=fake-acp source=install-command dir=${join(bootstrapDir(cache, 'fake-acp'), 'implementation')} note="first run; reused afterwards"\n`);
    expect(existsSync(join(bootstrapDir(cache, 'fake-acp'), '.bootstrap-complete.json'))).toBe(false);
    const failing = fakeProfile(cache, { source: { type: 'install-command', command: 'false; echo unreachable' } });
    await expect(bootstrap(failing, { cacheDir: cache, progress: null })).rejects.toMatchObject({ code: 'acp-bootstrap-failed' });
  });
});

describe('authentication selection', () => {
  const gateway = { gateway: { env: { KEY: { $source: 'gateway-api-key' as const }, URL: { $source: 'gateway-base-url' as const, ensureSuffix: '/v1' }, CFG: { p: { base_url: { $source: 'gateway-base-url' as const }, ua: { $source: 'client-app' as const } } } } } };
  const app = { name: 'acx', version: '9.9.9' };
  it('uses the Gateway only when credentials and a profile are available (auto)', () => {
    expect(selectAuth({ ...base, providerAuthentication: gateway }, {}, app).mode).toBe('direct');
    const chosen = selectAuth({ ...base, providerAuthentication: gateway }, { AI_GATEWAY_API_KEY: 'gw' }, app);
    expect(chosen.mode).toBe('ai-gateway');
    expect(chosen.gatewayEnv).toEqual({ KEY: 'gw', URL: 'https://ai-gateway.vercel.sh/v1', CFG: JSON.stringify({ p: { base_url: 'https://ai-gateway.vercel.sh', ua: 'acx/9.9.9' } }) });
    expect(selectAuth({ ...base, providerAuthentication: gateway, auth: 'direct' }, { AI_GATEWAY_API_KEY: 'gw' }, app).mode).toBe('direct');
    expect(() => selectAuth({ ...base, providerAuthentication: gateway, auth: 'ai-gateway' }, {}, app)).toThrow(HarnessCapabilityUnsupportedError);
    // An auth record replaces the host environment for discovery.
    expect(selectAuth({ ...base, providerAuthentication: gateway, auth: { VERCEL_OIDC_TOKEN: 'oidc', AI_GATEWAY_BASE_URL: 'https://gw.example/' } }, { AI_GATEWAY_API_KEY: 'ignored' }, app).gatewayEnv.URL).toBe('https://gw.example/v1');
  });
  it('resolves every placeholder kind', () => {
    const env = resolveGatewayEnv(
      { A: { $source: 'gateway-authorization' }, B: { $source: 'client-app-name' }, C: { $source: 'client-app-version' }, D: 'plain' },
      { apiKey: 'k', baseUrl: 'https://g', clientApp: app },
    );
    expect(env).toEqual({ A: 'Bearer k', B: 'acx', C: '9.9.9', D: 'plain' });
  });
});

