/**
 * What the bubblewrap sandbox costs an ACP agent, measured in one run.
 * Run: `npx node bench/acp-sandbox.ts [rounds=7]`.
 *
 * Both sides drive the fake agent (test/fixtures/acp/fake-agent.ts) through createACP with the
 * same brokered model API (a local model server): the anchor in a local sandbox with
 * `confine: 'none'` (a plain child process, acx before the sandbox), the other confined by
 * bubblewrap. Per round, in rotated order: session start (spawn + initialize + session/new),
 * a text turn (`[[hello]]`: stdio only), and a turn that calls the model API twice through the
 * broker (`[[fetch:…]]`: through the in-sandbox relay and the unix socket when confined).
 * Ratios are confined / unconfined medians. Information only: it exits 0.
 */
import { performance } from 'node:perf_hooks';
import { detectConfinement } from '../src/harness/acp/confinement.ts';
import { createACP } from '../src/harness/acp/create.ts';
import { createCredentialRequestTransformation } from '../src/harness/acp/credential-proxy.ts';
import { createLocalSandbox } from '../src/harness/acp/sandbox.ts';
import { HarnessAgent } from '../src/harness/harness-agent.ts';
import { fakeProfile, tempCache } from '../test/harness/acp/fake-profile.ts';
import { startModelServer } from '../test/support/model-server.ts';

const ROUNDS = Number(process.argv[2] ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const confinement = await detectConfinement({});
if (confinement.kind !== 'bubblewrap') {
  console.log(`acp-sandbox: SKIPPED, no bubblewrap here (${confinement.reason})`);
  process.exit(0);
}

const model = await startModelServer({ fallback: { text: 'ok' } });
const cache = tempCache();
type Side = 'none' | 'auto';
const samples: Record<Side, { start: number[]; hello: number[]; model: number[] }> = {
  none: { start: [], hello: [], model: [] },
  auto: { start: [], hello: [], model: [] },
};

async function round(side: Side): Promise<void> {
  const harness = createACP(
    fakeProfile(cache, {
      hostEnv: { FAKE_BASE_URL: model.url, FAKE_API_KEY: 'sk-bench' },
      forwardEnv: ['FAKE_BASE_URL'],
      credentialEnv: ['FAKE_API_KEY'],
      credentialBrokering: ({ env, sandboxEnv }) => [
        createCredentialRequestTransformation({ matchUrl: env.FAKE_BASE_URL!, matchHeaders: { 'x-api-key': sandboxEnv.FAKE_API_KEY! }, transformHeaders: { 'x-api-key': env.FAKE_API_KEY! }, baseUrlEnv: 'FAKE_BASE_URL' }),
      ],
      sandbox: createLocalSandbox({ env: {}, confine: side }),
    }),
  );
  await harness.bootstrap(); // installed once, outside the timings
  const agent = new HarnessAgent({ harness });
  let t = performance.now();
  const session = await agent.createSession();
  await agent.generate({ session, prompt: '[[state]]' }); // the session is opened lazily, by its first turn
  samples[side].start.push(performance.now() - t);
  try {
    t = performance.now();
    await agent.generate({ session, prompt: '[[hello]]' });
    samples[side].hello.push(performance.now() - t);
    t = performance.now();
    const text = (await agent.generate({ session, prompt: '[[fetch:FAKE_BASE_URL,FAKE_API_KEY]]' })).text;
    samples[side].model.push(performance.now() - t);
    if (text !== 'ok=200 bad=200') throw new Error(`unexpected answer from the model turn: ${text}`);
  } finally {
    await session.destroy();
    await harness.close!();
  }
}

for (let i = 0; i < ROUNDS; i++) for (const side of (i % 2 === 0 ? ['none', 'auto'] : ['auto', 'none']) as Side[]) await round(side);
await model.close();

console.log(`acp-sandbox (${ROUNDS} rounds, medians; unconfined = plain child process, confined = bubblewrap)`);
for (const key of ['start', 'hello', 'model'] as const) {
  const none = median(samples.none[key]);
  const auto = median(samples.auto[key]);
  const label = { start: 'session start + first turn', hello: 'text turn (stdio)', model: 'turn with 2 model calls via broker' }[key];
  console.log(`  ${label.padEnd(36)} unconfined ${none.toFixed(1).padStart(7)} ms   confined ${auto.toFixed(1).padStart(7)} ms   ratio ${(auto / none).toFixed(2)}×`);
}
