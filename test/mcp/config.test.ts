import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expandEnvReferences, fromOrigin, loadMcpConfigDir, loadMcpConfigs, loadMcpDropIns, parseMcpDropIns, parseMcpSpec, splitCommandLine } from '../../src/mcp/config.ts';
import { ConfigError } from '../../src/core/errors.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-mcp-config-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, content: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('mcp/ directory', () => {
  it('names a server by its file stem and reads both transports', () => {
    write('mempalace.json', { command: 'uvx', args: ['mempalace-mcp'], env: { API_KEY: '${KEY}' } });
    write('remote.json', { url: 'https://host.example/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } });
    write('README.md', '# not a config');
    write('.hidden.json', '{ broken');
    const configs = loadMcpConfigDir(dir);
    expect(configs.map((c) => [c.name, c.transport])).toEqual([
      ['mempalace', 'stdio'],
      ['remote', 'http'],
    ]);
    const stdio = configs[0]!;
    expect(stdio).toMatchObject({ command: 'uvx', args: ['mempalace-mcp'], env: { API_KEY: '${KEY}' }, scopes: [], kind: 'other', effect: 'unsafe' });
  });

  it('accepts the single-entry {"mcpServers": {...}} wrapper, named by its key', () => {
    write('x_mcp.json', { mcpServers: { xapi: { command: 'xurl', args: ['mcp', 'https://api.x.com/mcp'] } } });
    expect(loadMcpConfigDir(dir).map((c) => c.name)).toEqual(['xapi']);
  });

  it('read as drop-ins, a broken file or a reused name is skipped with its reason, the rest load', () => {
    write('good.json', { command: 'srv' });
    write('syntax.json', '{ "command": "x", }');
    write('twin.json', { mcpServers: { good: { command: 'other' } } });
    const { configs, skipped } = loadMcpDropIns(dir);
    expect(configs.map((c) => c.name)).toEqual(['good']);
    expect(skipped).toEqual([
      { name: 'syntax', source: path.join(dir, 'syntax.json'), reason: expect.stringMatching(/is not valid JSON/) },
      { name: 'good', source: path.join(dir, 'twin.json'), reason: `the name "good" is already used by ${path.join(dir, 'good.json')}` },
    ]);
    expect(loadMcpDropIns(path.join(dir, 'nope'))).toEqual({ configs: [], skipped: [] });
  });

  it('read as drop-ins, a file someone else could have written (or one in such a folder) is refused, naming the file and the fix', () => {
    const open = write('open.json', { command: 'srv' });
    write('good.json', { command: 'srv' });
    fs.chmodSync(open, 0o666);
    expect(loadMcpDropIns(dir)).toEqual({
      configs: [expect.objectContaining({ name: 'good' })],
      skipped: [
        {
          name: 'open',
          source: open,
          reason: `MCP config ${open}: not used: it is writable by group and others (mode 0666), so someone else could change the code acx runs (fix: chmod go-w ${open})`,
        },
      ],
    });
    fs.chmodSync(dir, 0o775);
    expect(loadMcpDropIns(dir).skipped.map((entry) => [entry.name, entry.reason])).toEqual([
      ['good', `MCP config ${path.join(dir, 'good.json')}: not used: its directory ${dir} is writable by group (mode 0775), so someone else could change the code acx runs (fix: chmod go-w ${dir})`],
      ['open', expect.stringContaining(`MCP config ${open}: not used: it is writable by group and others`)],
    ]);
  });

  it('"required" / "optional" say whether a turn may start without the server; left out, where the drop-in came from decides', () => {
    const document = (name: string, text: unknown, origin?: 'agent') => ({ name, source: path.join(dir, `${name}.json`), text: JSON.stringify(text), baseDir: dir, ...(origin ? { origin } : {}) });
    const { configs, skipped } = parseMcpDropIns([
      document('shipped', { command: 'srv' }, 'agent'),
      document('shipped-optional', { command: 'srv', optional: true }, 'agent'),
      document('hosted', { command: 'srv' }),
      document('hosted-required', { command: 'srv', required: true }),
      document('hosted-not-optional', { command: 'srv', optional: false }),
    ]);
    expect(skipped).toEqual([]);
    expect(Object.fromEntries(configs.map((c) => [c.name, [c.origin, c.required]]))).toEqual({
      shipped: ['agent', true],
      'shipped-optional': ['agent', false],
      hosted: ['host', false],
      'hosted-required': ['host', true],
      'hosted-not-optional': ['host', true],
    });
    // A --mcp flag and a cartridge's ROM are required by default too; an editor's servers are not.
    const spec = parseMcpSpec('lookup=srv --stdio');
    expect([fromOrigin(spec, 'flag').required, fromOrigin(spec, 'cartridge').required, fromOrigin(spec, 'client').required]).toEqual([true, true, false]);
    write('both.json', { command: 'srv', required: true, optional: true });
    expect(configError(() => loadMcpConfigDir(dir)).message).toBe(`MCP config ${path.join(dir, 'both.json')}: says both "required": true and "optional": true`);
    write('both.json', { command: 'srv', optional: 'yes' });
    expect(configError(() => loadMcpConfigDir(dir)).message).toBe(`MCP config ${path.join(dir, 'both.json')}: "optional" must be true or false`);
  });

  it('an absent directory means no drop-ins', () => {
    expect(loadMcpConfigDir(path.join(dir, 'nope'))).toEqual([]);
  });

  it('resolves a relative cwd against the config file and keeps scopes, kind and effect', () => {
    write('files.json', { command: 'srv', cwd: 'work', scopes: ['fs.read'], kind: 'read', effect: 'read-only' });
    const [config] = loadMcpConfigDir(dir);
    expect(config).toMatchObject({ cwd: path.join(dir, 'work'), scopes: ['fs.read'], kind: 'read', effect: 'read-only' });
  });

  const malformed: Array<[string, unknown, RegExp]> = [
    ['syntax.json', '{ "command": "x", }', /syntax\.json: is not valid JSON/],
    ['array.json', [1, 2], /array\.json: must be a JSON object/],
    ['neither.json', { args: ['x'] }, /needs "command" .* or "url"/],
    ['both.json', { command: 'x', url: 'https://h/mcp' }, /both "command" and "url"/],
    ['args.json', { command: 'x', args: 'one two' }, /"args" must be an array of strings/],
    ['env.json', { command: 'x', env: { KEY: 42 } }, /"env\.KEY" must be a string/],
    ['url.json', { url: 'ftp://host/mcp' }, /must be http\(s\)/],
    ['creds.json', { url: 'https://user:pw@host/mcp' }, /must not carry credentials/],
    ['ssecmd.json', { type: 'sse', command: 'x' }, /"type": "sse" needs a "url", not a "command"/],
    ['typewho.json', { type: 'websocket', url: 'https://h/ws' }, /unknown "type" "websocket" \(expected "stdio", "http" or "sse"\)/],
    ['disagree.json', { type: 'sse', transport: 'http', url: 'https://h/mcp' }, /"type" and "transport" disagree/],
    ['oauthcmd.json', { command: 'x', oauth: {} }, /"oauth" only applies to a "url" server/],
    ['oauthhdr.json', { url: 'https://h/mcp', headers: { authorization: 'Bearer x' }, oauth: {} }, /has both an "Authorization" header and "oauth"/],
    ['oauthkey.json', { url: 'https://h/mcp', oauth: { clientID: 'x' } }, /"oauth" has unknown key "clientID"/],
    ['oauthgrant.json', { url: 'https://h/mcp', oauth: { grant: 'password' } }, /"oauth.grant" must be one of authorization_code, client_credentials, cross-app-access/],
    ['oauthsecret.json', { url: 'https://h/mcp', oauth: { clientSecret: '${S}' } }, /"oauth.clientSecret" needs "oauth.clientId"/],
    ['oauthport.json', { url: 'https://h/mcp', oauth: { redirectPort: 70000 } }, /"oauth.redirectPort" must be an integer from 1 to 65535/],
    ['oauthcimd.json', { url: 'https://h/mcp', oauth: { clientMetadataUrl: 'http://app.example/acx.json' } }, /"oauth.clientMetadataUrl" must be an https URL/],
    ['oauthcc.json', { url: 'https://h/mcp', oauth: { grant: 'client_credentials', clientId: 'a' } }, /needs exactly one of "oauth.clientSecret" and "oauth.privateKey"/],
    ['oauthccport.json', { url: 'https://h/mcp', oauth: { grant: 'client_credentials', clientId: 'a', clientSecret: 'b', redirectPort: 9 } }, /"oauth.redirectPort" does not apply to the client_credentials grant/],
    ['oauthxaa.json', { url: 'https://h/mcp', oauth: { grant: 'cross-app-access', clientId: 'a', clientSecret: 'b' } }, /needs "oauth.clientId", "oauth.clientSecret" and "oauth.idp"/],
    ['oauthidp.json', { url: 'https://h/mcp', oauth: { grant: 'cross-app-access', clientId: 'a', clientSecret: 'b', idp: { clientId: 'c' } } }, /"oauth.idp" needs "tokenEndpoint", "clientId" and "idToken"/],
    ['scope.json', { command: 'x', scopes: ['root'] }, /unknown capability scope "root"/],
    ['effect.json', { command: 'x', effect: 'harmless' }, /"effect" must be one of/],
    ['two.json', { mcpServers: { a: { command: 'a' }, b: { command: 'b' } } }, /exactly one server, found 2 \(a, b\)/],
    ['bad name!.json', { command: 'x' }, /server name "bad name!" is not usable/],
  ];
  it.each(malformed)('%s gives a ConfigError naming the file and the problem', (file, content, problem) => {
    write(file, content);
    const error = configError(() => loadMcpConfigDir(dir));
    expect(error.message).toContain(path.join(dir, file));
    expect(error.message).toMatch(problem);
    expect(error.hint).toBeTruthy();
  });

  it('reads the legacy SSE transport from "type" or "transport", and keeps an "oauth" block as given', () => {
    write('legacy.json', { type: 'sse', url: 'https://h.example/sse' });
    write('legacy2.json', { transport: 'sse', url: 'https://h2.example/sse' });
    write('tracker.json', { url: 'https://t.example/mcp', oauth: { clientId: '${T_ID}', clientSecret: '${T_SECRET}', scope: 'read write', redirectPort: 8765, issuer: 'https://auth.t.example' } });
    write('robot.json', { url: 'https://r.example/mcp', oauth: { grant: 'client_credentials', clientId: 'bot', privateKey: '${BOT_KEY}', algorithm: 'ES256' } });
    const configs = Object.fromEntries(loadMcpConfigDir(dir).map((c) => [c.name, c]));
    expect(configs.legacy).toMatchObject({ transport: 'sse', url: 'https://h.example/sse' });
    expect(configs.legacy2).toMatchObject({ transport: 'sse' });
    expect(configs.tracker).toMatchObject({
      transport: 'http',
      oauth: { grant: 'authorization_code', clientId: '${T_ID}', clientSecret: '${T_SECRET}', scope: 'read write', redirectPort: 8765, issuer: 'https://auth.t.example' },
    });
    expect(configs.robot).toMatchObject({ oauth: { grant: 'client_credentials', clientId: 'bot', privateKey: '${BOT_KEY}', algorithm: 'ES256' } });
    expect(configs.legacy).not.toHaveProperty('oauth');
  });

  it('never echoes env or header values in errors', () => {
    write('leaky.json', { url: 'https://h/mcp', headers: { Authorization: 'Bearer sk-supersecretvalue123456' }, env: { A: 'b' } });
    const error = configError(() => loadMcpConfigDir(dir));
    expect(error.message).not.toContain('supersecret');
  });

  it('rejects the same server name twice', () => {
    write('a.json', { mcpServers: { shared: { command: 'a' } } });
    write('shared.json', { command: 'b' });
    expect(configError(() => loadMcpConfigDir(dir)).message).toMatch(/"shared" is used twice/);
  });
});

describe('--mcp specs', () => {
  it('name=url is a Streamable HTTP server', () => {
    expect(parseMcpSpec('docs=https://docs.example/mcp')).toMatchObject({ name: 'docs', transport: 'http', url: 'https://docs.example/mcp' });
  });

  it('name=command args is a stdio server, quotes group, no shell', () => {
    expect(parseMcpSpec(`fs=npx -y "@scope/server fs" '$HOME'`)).toMatchObject({
      name: 'fs',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@scope/server fs', '$HOME'],
    });
  });

  it('a path to a .json file loads that file', () => {
    const file = write('tools.json', { command: 'srv' });
    expect(parseMcpSpec(file)).toMatchObject({ name: 'tools', command: 'srv' });
    expect(parseMcpSpec('tools.json', dir)).toMatchObject({ name: 'tools' });
  });

  it('bad specs say what the syntax is', () => {
    expect(configError(() => parseMcpSpec('just-a-word')).hint).toMatch(/name=https:\/\/host\/mcp/);
    expect(configError(() => parseMcpSpec('x=')).message).toMatch(/nothing after "="/);
    expect(configError(() => parseMcpSpec('x=cmd "unclosed')).message).toMatch(/unbalanced/);
  });

  it('combines a directory with specs and refuses duplicates', () => {
    write('one.json', { command: 'a' });
    expect(loadMcpConfigs({ dir, specs: ['two=b'] }).map((c) => c.name)).toEqual(['one', 'two']);
    expect(configError(() => loadMcpConfigs({ dir, specs: ['one=b'] })).message).toMatch(/used twice/);
  });

  it('splitCommandLine keeps empty quoted arguments', () => {
    expect(splitCommandLine(`a "" 'b c'`)).toEqual(['a', '', 'b c']);
  });
});

describe('${VAR} references', () => {
  it('are filled from the host env and missing ones are reported by name', () => {
    const { values, missing } = expandEnvReferences({ A: 'Bearer ${TOKEN}', B: '${NOPE}-${NOPE}', C: 'plain $X' }, { TOKEN: 't0k' });
    expect(values).toEqual({ A: 'Bearer t0k', B: '-', C: 'plain $X' });
    expect(missing).toEqual(['NOPE']);
  });

  it('with a grant, expands only the granted variables and reports the others without reading them', () => {
    const env = { OPENAI_API_KEY: 'sk-real', TOKEN: 't0k' };
    const { values, missing, refused } = expandEnvReferences({ K: '${OPENAI_API_KEY}', A: 'Bearer ${TOKEN}', B: '${UNSET}' }, env, ['TOKEN', 'UNSET']);
    expect(values).toEqual({ K: '', A: 'Bearer t0k', B: '' });
    expect(refused).toEqual(['OPENAI_API_KEY']);
    expect(missing).toEqual(['UNSET']);
    expect(expandEnvReferences({ K: '${OPENAI_API_KEY}' }, env, []).refused).toEqual(['OPENAI_API_KEY']);
  });
});
