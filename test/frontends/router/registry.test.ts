// The router's registry file and its --agents list: what an operator writes, read exactly, and
// every mistake a clear error naming the file, the line and what to write instead.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAgentList, parseRouterAgentList } from '../../../src/frontends/router/agents.ts';
import { loadRegistry, parseRegistry } from '../../../src/frontends/router/registry.ts';

const NOVA = '0190a5f2-0000-7000-8000-00000000000a';
const JT = '0190a5f2-0000-7000-8000-00000000000b';

describe('the registry file', () => {
  it('reads one agent a line: handle, recipient uuid, token variable, then the wake command as argv', () => {
    const text = [
      '# the fleet behind this router',
      '',
      `nova   ${NOVA}  -         acx wake agents/nova`,
      `  # jt is a basecradle-harness persona`,
      `jt\t${JT.toUpperCase()}\tJT_TOKEN\tenv -C "/home/jt/my agent" HARNESS_HOME=/home/jt/.harness /usr/local/bin/basecradle-harness-wake`,
      `ada    0190a5f2-0000-7000-8000-00000000000c  ADA_TOKEN acx wake /srv/ada --model openai:gpt-5`,
    ].join('\n');
    expect(parseRegistry(text, '/etc/acx/registry')).toEqual([
      { name: 'nova', uuid: NOVA, tokenVariable: 'BASECRADLE_TOKEN_NOVA', dir: '/etc/acx/agents/nova' },
      {
        name: 'jt',
        uuid: JT,
        tokenVariable: 'JT_TOKEN',
        command: ['env', '-C', '/home/jt/my agent', 'HARNESS_HOME=/home/jt/.harness', '/usr/local/bin/basecradle-harness-wake'],
      },
      // Not exactly `acx wake DIR`: a command of its own, with `acx` standing for this acx.
      { name: 'ada', uuid: '0190a5f2-0000-7000-8000-00000000000c', tokenVariable: 'ADA_TOKEN', command: ['acx', 'wake', '/srv/ada', '--model', 'openai:gpt-5'] },
    ]);
  });

  it('says which line is wrong and how', () => {
    const line = (text: string) => () => parseRegistry(`# header\n${text}\n`, 'fleet.txt');
    expect(line(`nova ${NOVA} -`)).toThrow('fleet.txt line 2: expected "handle recipient-uuid token-variable wake command…", got 3 field(s).');
    expect(line(`@nova ${NOVA} - acx wake x`)).toThrow('fleet.txt line 2: "@nova" is not a platform handle (letters, digits, _ and -).');
    expect(line('nova 12345 - acx wake x')).toThrow('fleet.txt line 2: "12345" is not a recipient uuid');
    expect(line(`nova ${NOVA} MY-TOKEN acx wake x`)).toThrow('fleet.txt line 2: "MY-TOKEN" is not a variable name (or - for BASECRADLE_TOKEN_NOVA).');
    expect(line(`nova ${NOVA} - "/opt/my wake`)).toThrow('fleet.txt line 2: a quote may only wrap a whole word ("…"), and must be closed.');
    expect(line(`nova ${NOVA} - acx wake a\nNova ${JT} - acx wake b`)).toThrow('fleet.txt names @Nova twice.');
    expect(line(`nova ${NOVA} - acx wake a\nada ${NOVA} - acx wake b`)).toThrow('fleet.txt line 3: @ada has the recipient uuid of @nova; each agent is its own platform user.');
    expect(() => parseRegistry('# nothing yet\n', 'fleet.txt')).toThrow('fleet.txt lists no agents');
  });

  it('a file that cannot be read is named, with why', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-registry-'));
    expect(() => loadRegistry(join(dir, 'missing'))).toThrow(`cannot read the registry file ${join(dir, 'missing')}: ENOENT.`);
    writeFileSync(join(dir, 'fleet'), `jt ${JT} JT_TOKEN /bin/true\n`);
    expect(loadRegistry(join(dir, 'fleet'))).toEqual([{ name: 'jt', uuid: JT, tokenVariable: 'JT_TOKEN', command: ['/bin/true'] }]);
  });
});

describe('--agents', () => {
  it('acx router takes a wake command after exec:, split on spaces; worker and platform serve take directories only', () => {
    expect(parseRouterAgentList('nova=/srv/nova, jt=exec:/usr/local/bin/basecradle-harness-wake --quiet')).toEqual([
      { name: 'nova', dir: '/srv/nova' },
      { name: 'jt', command: ['/usr/local/bin/basecradle-harness-wake', '--quiet'] },
    ]);
    expect(() => parseRouterAgentList('jt=exec:')).toThrow('--agents: "jt=exec:" names no program after exec:.');
    expect(() => parseAgentList('jt=exec:/bin/wake')).toThrow('--agents here takes acx agent directories only; "jt=exec:/bin/wake" names a wake command (acx router takes those).');
  });
});
