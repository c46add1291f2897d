/**
 * Builds examples/cartridges/notes-keeper.acx from examples/cartridges/notes-keeper/, writes the
 * trust registry that holds its public key, and re-records the offline cassette.
 *
 *   npx node scripts/build-example-cartridge.ts
 *
 * The signing key is generated in memory for this one build and thrown away: no private key is
 * ever written to disk or committed. Rebuilding therefore changes the keyid, and the registry
 * file is rewritten to match.
 *
 * No model API is reachable where acx is developed, so the cassette is recorded through the real
 * OpenAI Responses wire against acx's scripted local model server (test/support), which plays a
 * model that stores a fact, searches the team's ROM memory and answers. To record a real model:
 *   cp examples/cartridges/notes-keeper.acx /tmp/nk.acx
 *   OPENAI_API_KEY=... npx acx run /tmp/nk.acx "<the same prompt>" --model openai:gpt-5.4-mini \
 *     --registry examples/cartridges/trust-registry.json --record examples/cartridges/cassettes/quickstart.json
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCartridge } from '../src/cartridge/build.ts';
import { generateSigningKey } from '../src/cartridge/keys.ts';
import { verifyCartridge } from '../src/cartridge/verify.ts';
import { PUBLISHER, trustRegistryFor } from '../test/support/cartridge-fixtures.ts';
import { respondByTurn, startModelServer } from '../test/support/model-server.ts';

export const CARTRIDGE_PROMPT = 'Remember that the release freeze starts on 12 December. When can we still deploy before it?';

const root = join(import.meta.dirname, '..');
const examples = join(root, 'examples/cartridges');
const out = join(examples, 'notes-keeper.acx');
const registry = join(examples, 'trust-registry.json');
const cassette = join(examples, 'cassettes/quickstart.json');

const key = generateSigningKey();
const built = buildCartridge({ dir: join(examples, 'notes-keeper'), out, key, publisher: PUBLISHER, overwrite: true });
writeFileSync(registry, `${JSON.stringify(trustRegistryFor(key, PUBLISHER), null, 2)}\n`);
const verdict = verifyCartridge(out, { registry }).verdict;
process.stdout.write(`built ${out}\n  rom hash ${built.manifestHash}\n  keyid    ${built.keyid}\n  verdict  ${verdict} (with ${registry})\n`);
if (verdict !== 'trusted') throw new Error(`the example cartridge should be trusted with its registry, got ${verdict}`);

const server = await startModelServer({
  fallback: respondByTurn(({ request }) => {
    if (!request.view.messages.some((message) => message.role === 'tool')) {
      return {
        toolCalls: [
          { id: 'call_store', name: 'add_memory', input: { summary: 'The release freeze starts on 12 December.' } },
          { id: 'call_search', name: 'search_memory', input: { query: 'deploy' } },
        ],
        usage: { inputTokens: 1510, outputTokens: 61 },
      };
    }
    return {
      text: 'Noted: the release freeze starts on 12 December. We deploy on Tuesdays and Thursdays before 15:00 UTC, so the last window before the freeze is Thursday 10 December, before 15:00 UTC.',
      usage: { inputTokens: 1790, outputTokens: 47 },
    };
  }),
});
const home = mkdtempSync(join(tmpdir(), 'acx-record-'));
try {
  // Record against a copy: the committed cartridge keeps an empty SAVE zone.
  const copy = join(home, 'notes-keeper.acx');
  copyFileSync(out, copy);
  mkdirSync(join(examples, 'cassettes'), { recursive: true });
  rmSync(cassette, { force: true });
  const child = spawn(
    process.execPath,
    [join(root, 'bin/acx.js'), 'run', copy, CARTRIDGE_PROMPT, '--model', 'openai:demo-model', '--home', home, '--config-home', home, '--registry', registry, '--record', cassette],
    { stdio: 'inherit', env: { ...process.env, OPENAI_API_KEY: 'sk-local-recording', OPENAI_BASE_URL: server.openaiBaseURL } },
  );
  process.exitCode = await new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
} finally {
  await server.close();
  rmSync(home, { recursive: true, force: true });
}
