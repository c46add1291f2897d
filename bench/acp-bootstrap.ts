/**
 * Time to a working ACP session with a cold bootstrap vs a cached one, measured in one run.
 * Run: `npx node bench/acp-bootstrap.ts [rounds=5] [--npm[=pkg@version]]`.
 *
 * Each round starts from a fresh ACX_CACHE_DIR (cacheDir) and measures, from `createACP` to the
 * end of a first text turn:
 * - **cold**: the first session — the bootstrap installs the implementation, writes its marker;
 * - **warm (new process)**: a new harness over the same cache dir, as the next `acx run` would
 *   be — the marker is read and the install reused;
 * - **warm (same harness)**: a second session on the harness that already bootstrapped.
 * Default source: the fake agent (test/fixtures/acp/fake-agent.ts) packaged as an
 * `install-command` recipe (a Bash script writing `$HOME/.local/bin/fake-acp`) — offline and
 * deterministic, so cold mostly measures acx's own bootstrap machinery (lock, Bash, marker).
 * `--npm` uses `npm-simple` with the real `@agentclientprotocol/claude-agent-acp@0.101.0` (or
 * the given package) against the local model server: cold then includes `npm install` (npm's
 * own ~/.npm cache is not cleared, so it may be served from there rather than the network).
 * Ratios are cold / warm; no thresholds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createACP } from '../src/harness/acp/create.ts';
import { claudeCodeProfile } from '../src/harness/acp/profiles/claude-code.ts';
import type { ACPSettings } from '../src/harness/acp/settings.ts';
import { HarnessAgent } from '../src/harness/harness-agent.ts';
import { fakeProfile } from '../test/harness/acp/fake-profile.ts';
import { startModelServer } from '../test/support/model-server.ts';

const npmFlag = process.argv.find((a) => a.startsWith('--npm'));
const ROUNDS = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? (npmFlag ? 2 : 5));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;

const server = npmFlag ? await startModelServer({ fallback: { text: 'PONG' } }) : undefined;

function settingsFor(cacheDir: string): ACPSettings {
  if (!npmFlag) {
    return fakeProfile(cacheDir, { harnessId: 'bench-fake-acp' });
  }
  const spec = npmFlag.includes('=') ? npmFlag.slice(npmFlag.indexOf('=') + 1) : '';
  const at = spec.lastIndexOf('@');
  const source = spec
    ? { type: 'npm-simple' as const, packageName: at > 0 ? spec.slice(0, at) : spec, ...(at > 0 ? { packageVersion: spec.slice(at + 1) } : {}) }
    : claudeCodeProfile.source;
  return { ...claudeCodeProfile, source, cacheDir, progress: null, hostEnv: { ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: 'sk-bench-0123456789' } } as ACPSettings;
}

/** From createACP (or an existing harness) to the end of a first text turn. */
async function firstTurn(harness: ReturnType<typeof createACP>): Promise<number> {
  const start = performance.now();
  const agent = new HarnessAgent({ harness, permissionMode: 'allow-all' });
  const session = await agent.createSession();
  await agent.generate({ session, prompt: npmFlag ? 'ping' : '[[hello]]' });
  const elapsed = performance.now() - start;
  await session.destroy();
  return elapsed;
}

const cold: number[] = [];
const warmNew: number[] = [];
const warmSame: number[] = [];
for (let r = 0; r < ROUNDS + 1; r++) {
  const cacheDir = mkdtempSync(join(tmpdir(), 'acx-bench-bootstrap-'));
  const first = createACP(settingsFor(cacheDir));
  const c = await firstTurn(first);
  const s = await firstTurn(first);
  await first.close?.();
  const second = createACP(settingsFor(cacheDir));
  const w = await firstTurn(second);
  await second.close?.();
  rmSync(cacheDir, { recursive: true, force: true });
  if (r === 0) continue; // warm-up round (JIT, npm's own cache)
  cold.push(c);
  warmSame.push(s);
  warmNew.push(w);
}
await server?.close();

const source = npmFlag ? `npm-simple ${JSON.stringify(settingsFor('x').source)}` : 'install-command (fake agent)';
console.log(`ACP bootstrap: cold vs cached, ${source}, ${ROUNDS} rounds (medians, createACP → first turn done)`);
console.log(`  cold (fresh ACX_CACHE_DIR):        ${ms(median(cold))}`);
console.log(`  warm, new harness (next acx run):  ${ms(median(warmNew))}   cold/warm ${(median(cold) / median(warmNew)).toFixed(2)}x`);
console.log(`  warm, same harness (2nd session):  ${ms(median(warmSame))}   cold/warm ${(median(cold) / median(warmSame)).toFixed(2)}x`);
console.log(`  bootstrap cost (cold − warm new):  ${ms(median(cold) - median(warmNew))}`);
