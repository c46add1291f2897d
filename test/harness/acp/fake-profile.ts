// Shared setup for adapter tests: a profile that "installs" the fake ACP agent with an
// install-command bootstrap (a wrapper in $HOME/.local/bin that runs the fixture under acx's Node).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { tool } from '../../../src/tools/tool.ts';

export const FAKE_AGENT = fileURLToPath(new URL('../../fixtures/acp/fake-agent.ts', import.meta.url));

export function tempCache(): string {
  return mkdtempSync(join(tmpdir(), 'acx-acp-cache-'));
}

export function fakeInstallCommand(marker?: string): string {
  return [
    `cat > "$HOME/.local/bin/fake-acp" <<'SH'`,
    '#!/bin/sh',
    `exec '${process.execPath}' '${FAKE_AGENT}' "$@"`,
    'SH',
    'chmod +x "$HOME/.local/bin/fake-acp"',
    ...(marker ? [`echo run >> '${marker}'`] : []),
  ].join('\n');
}

export function fakeProfile(cacheDir: string, overrides: Partial<ACPSettings> = {}): ACPSettings {
  return {
    harnessId: 'fake-acp',
    source: { type: 'install-command', command: fakeInstallCommand() },
    executable: 'fake-acp',
    modelMapping: { type: 'session-config-option', path: 'model' },
    cacheDir,
    progress: null,
    hostEnv: {},
    cancelGraceMs: 3000,
    ...overrides,
  };
}

/** Every part of a harness stream, in order. */
export async function collect(stream: AsyncIterable<HarnessStreamPart>): Promise<HarnessStreamPart[]> {
  const parts: HarnessStreamPart[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}

/** A host tool the fake agent can call over MCP (its `mcp` command). */
export const echo = tool({
  name: 'echo',
  description: 'Echoes its input',
  inputSchema: z.object({ text: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ text }: { text: string }) => `echo:${text}`,
});
