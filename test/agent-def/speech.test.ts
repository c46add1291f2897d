// agent.json's `speech`: how the agent is heard. A speaking tool, "unspoken", or the final text
// ("direct", "final-text", or nothing); anything else is refused with the values it may take.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAgentDirectory } from '../../src/agent-def/definition.ts';
import { speechModeOf } from '../../src/agent-def/manifest.ts';

function agentDir(speech: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'acx-speech-'));
  writeFileSync(join(dir, 'agent.json'), JSON.stringify({ id: 'talker', name: 'Talker', version: '1.0.0', ...(speech === undefined ? {} : { speech }) }));
  writeFileSync(join(dir, 'AGENTS.md'), 'You talk.\n');
  return dir;
}

describe('agent.json speech', () => {
  it.each([
    [undefined, { mode: 'final-text' }],
    ['final-text', { mode: 'final-text' }],
    ['direct', { mode: 'final-text' }],
    ['unspoken', { mode: 'unspoken' }],
    [{ tool: 'messages' }, { mode: 'tool', tool: 'messages' }],
  ])('%o is read as %o', (speech, mode) => {
    const manifest = readAgentDirectory(agentDir(speech)).manifest;
    expect(speechModeOf(manifest.speech)).toEqual(mode);
  });

  it.each([['loud'], [{ tool: '' }], [42]])('refuses %o, naming what it may be', (speech) => {
    expect(() => readAgentDirectory(agentDir(speech))).toThrow(/"speech" must be "final-text", "direct", "unspoken" or \{"tool": "<name>"\}/);
  });
});
