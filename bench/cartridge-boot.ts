/**
 * Boot time to the first model call: the example agent as a signed cartridge
 * (examples/cartridges/notes-keeper.acx) against the same agent as a plain directory
 * (examples/cartridges/notes-keeper/), same process, same run, replayed model (no network).
 *
 *   npx node bench/cartridge-boot.ts [iterations]
 *
 * Timed: resolveSettings (for the cartridge: open, verify, trust gate, read ROM) → prepareAgent
 * (model, memory, tools; for the cartridge also the handshake, the SAVE descriptor and ROM
 * memory) → session → generate, up to the moment the engine calls the model. Each iteration
 * boots a fresh copy into a fresh state home, so the cartridge pays its first-boot SAVE write
 * every time (the worst case). Prints medians and the cartridge/directory ratio.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { prepareAgent } from '../src/app/prepare.ts';
import { resolveSettings, type RunFlags } from '../src/app/settings.ts';
import { silentLogger } from '../src/util/logger.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CARTRIDGE = join(ROOT, 'examples/cartridges/notes-keeper.acx');
const DIRECTORY = join(ROOT, 'examples/cartridges/notes-keeper');
const REGISTRY = join(ROOT, 'examples/cartridges/trust-registry.json');
const CASSETTE = join(ROOT, 'examples/cartridges/cassettes/quickstart.json');
const iterations = Number(process.argv[2] ?? 15);

class FirstModelCall extends Error {}

/** Milliseconds from nothing to the first model call. */
async function bootOnce(flags: RunFlags): Promise<number> {
  const start = process.hrtime.bigint();
  const settings = await resolveSettings(flags, { env: {}, logger: silentLogger });
  const prepared = await prepareAgent(settings, { logger: silentLogger });
  let elapsed = 0;
  const model = prepared.model.model;
  // generate() calls doGenerate, stream() doStream: either is the first model call.
  const stopHere = async (): Promise<never> => {
    elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    throw new FirstModelCall('stop here');
  };
  model.doStream = stopHere;
  model.doGenerate = stopHere;
  try {
    const session = await prepared.agent.createSession();
    await prepared.agent.generate({ session, prompt: 'When can we still deploy before the freeze?' }).catch(() => undefined);
  } finally {
    await prepared.close();
  }
  if (elapsed === 0) throw new Error('the model was never called');
  return elapsed;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const tmp = mkdtempSync(join(tmpdir(), 'acx-bench-boot-'));
try {
  const times = { cartridge: [] as number[], directory: [] as number[] };
  for (let i = -2; i < iterations; i++) {
    const home = join(tmp, `run-${i + 2}`);
    const copy = join(tmp, `nk-${i + 2}.acx`);
    copyFileSync(CARTRIDGE, copy);
    const common = { home: join(home, 'state'), configHome: join(home, 'config'), replay: CASSETTE };
    // Alternate the order so neither side always runs on a warmer cache.
    const order: Array<'cartridge' | 'directory'> = i % 2 ? ['cartridge', 'directory'] : ['directory', 'cartridge'];
    for (const kind of order) {
      const ms = await bootOnce(kind === 'cartridge' ? { ...common, agent: copy, registry: REGISTRY } : { ...common, agent: DIRECTORY });
      if (i >= 0) times[kind].push(ms); // the first two rounds warm up module caches
    }
  }
  const cart = median(times.cartridge);
  const dir = median(times.directory);
  console.log(`boot to first model call (median of ${iterations}, replayed model, fresh state each run)`);
  console.log(`  plain directory   ${dir.toFixed(1).padStart(8)} ms`);
  console.log(`  signed cartridge  ${cart.toFixed(1).padStart(8)} ms   (verify + trust gate + ROM read + handshake + SAVE descriptor)`);
  console.log(`  ratio cartridge/directory: ${(cart / dir).toFixed(2)}x  (+${(cart - dir).toFixed(1)} ms)`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
