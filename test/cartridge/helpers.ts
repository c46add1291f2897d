import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSigningKey } from '../../src/cartridge/keys.ts';

export const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/reference');
export const REFERENCE_CARTRIDGES = ['rex-calder.acx', 'ada-ridge.acx'].map((f) => join(FIXTURES, f));

export function tempDir(prefix = 'acx-cart-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Writes a small acx-layout agent directory; `extra` maps relative paths to contents. */
export function writeAgentDir(root: string, extra: Record<string, string> = {}): string {
  const files: Record<string, string> = {
    'agent.json': JSON.stringify({
      id: 'release-helper',
      name: 'Release Helper',
      version: '1.2.0',
      description: 'Prepares release notes and checks that a release is ready.',
      model: 'openai:gpt-5-mini',
      speech: 'direct',
      stepBudget: 12,
      tags: ['release'],
    }, null, 2),
    'prompts/system-prompt.md': '# Release Helper\n\nYou prepare release notes from merged changes.\n',
    'prompts/initialize.md': 'Read the changelog first, then ask what version is being released.\n',
    'skills/release-notes/SKILL.md': '---\nname: release-notes\ndescription: Write release notes from a list of merged changes. Use when preparing a release.\nmetadata:\n  version: 1.0.0\n---\n\n# Release notes\n\nGroup changes by kind.\n',
    'skills/release-notes/references/style.md': 'Use the imperative mood.\n',
    'memory/conventions.json': JSON.stringify([
      { key: 'changelog-format', value: 'Keep a Changelog 1.1', portable: true },
      { key: 'repo-quirk', value: 'CI is slow on Mondays', portable: false },
    ]),
    'mcp/filesystem.json': JSON.stringify({ name: 'filesystem', command: 'mcp-fs', args: [] }),
    ...extra,
  };
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}

/** A key pair in memory plus its private key written outside any agent dir. */
export function writeKey(dir: string): { keyPath: string; keyid: string; publicKeyPem: string } {
  const key = generateSigningKey();
  const keyPath = join(dir, 'signing.key.pem');
  writeFileSync(keyPath, key.privateKeyPem, { mode: 0o600 });
  return { keyPath, keyid: key.keyid, publicKeyPem: key.publicKeyPem };
}
