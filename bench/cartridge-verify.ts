/**
 * Verify and build time of acx against the reference implementation (lboel/acx), same inputs,
 * same process, same run. The two sides alternate in rounds; per-operation wall and CPU times
 * are medians over the rounds. Prints acx/reference ratios (< 1 = acx faster).
 *
 *   npx node bench/cartridge-verify.ts            (ACX_REFERENCE_DIR defaults to ../shared/reference-acx)
 *   BENCH_ITERATIONS=100 (verify runs per side; build runs = a fifth)  BENCH_ROUNDS=10
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildCartridge } from '../src/cartridge/build.ts';
import { generateSigningKey } from '../src/cartridge/keys.ts';
import { verifyCartridge } from '../src/cartridge/verify.ts';
import { REFERENCE_DIR, referenceMissing } from '../test/support/reference-acx.ts';

const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = join(PROJECT, 'test', 'fixtures', 'reference');

const missing = referenceMissing();
if (missing) {
  console.log(`skip: ${missing}`);
  process.exit(0);
}

const refUrl = (f: string) => pathToFileURL(join(REFERENCE_DIR, 'src', f)).href;
const { Cartridge: RefCartridge } = await import(refUrl('container.mjs'));
const { evaluateTrust, emptyTrustRegistry } = await import(refUrl('trust.mjs'));
const { generateSigningKey: refKey } = await import(refUrl('sign.mjs'));
const { exportPackageToCartridge } = await import(refUrl('export.mjs'));

interface Sample {
  wall: number[];
  cpu: number[];
}

/**
 * Runs the two sides in alternating rounds (A B, B A, A B, ...) so that load from other processes
 * on the machine falls on both alike, and records per round the wall time and the CPU time
 * (user + system) of this process per operation. Reports medians over the rounds.
 */
function compare(rounds: number, perRound: number, sides: Array<{ label: string; fn: (i: number) => void }>): Sample[] {
  const samples = sides.map((): Sample => ({ wall: [], cpu: [] }));
  let i = 0;
  for (const side of sides) for (let w = 0; w < 3; w++) side.fn(-1 - w - 3 * sides.indexOf(side)); // warm-up
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? sides.map((_, k) => k) : sides.map((_, k) => sides.length - 1 - k);
    for (const k of order) {
      const cpu0 = process.cpuUsage();
      const start = process.hrtime.bigint();
      for (let n = 0; n < perRound; n++) sides[k]!.fn(i++);
      const wall = Number(process.hrtime.bigint() - start) / 1e6 / perRound;
      const cpu = process.cpuUsage(cpu0);
      samples[k]!.wall.push(wall);
      samples[k]!.cpu.push((cpu.user + cpu.system) / 1000 / perRound);
    }
  }
  sides.forEach((side, k) => {
    const s = samples[k]!;
    console.log(`  ${side.label.padEnd(34)} ${median(s.wall).toFixed(3).padStart(9)} ms/op wall  ${median(s.cpu).toFixed(3).padStart(9)} ms/op cpu  (${rounds}x${perRound} runs)`);
  });
  return samples;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function ratio(label: string, acx: Sample, ref: Sample): void {
  console.log(`  ${label.padEnd(7)} ${(median(acx.wall) / median(ref.wall)).toFixed(2)} wall  ${(median(acx.cpu) / median(ref.cpu)).toFixed(2)} cpu`);
}

const tmp = mkdtempSync(join(tmpdir(), 'acx-bench-'));
try {
  const cartridges = ['rex-calder.acx', 'ada-ridge.acx'].map((f) => join(FIXTURES, f));
  const N = Number(process.env.BENCH_ITERATIONS ?? 100);
  const R = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 10));
  console.log('verify (reference registry cartridges, full ROM recompute + DSSE):');
  const [acxVerify, refVerify] = compare(R, Math.max(1, Math.round(N / R)), [
    {
      label: 'acx verifyCartridge',
      fn: (i) => {
        const v = verifyCartridge(cartridges[Math.abs(i) % 2]!);
        if (v.verdict !== 'portable') throw new Error(`unexpected verdict ${v.verdict}`);
      },
    },
    {
      label: 'reference open + evaluateTrust',
      fn: (i) => {
        const c = RefCartridge.open(cartridges[Math.abs(i) % 2]!, { readonly: true });
        const v = evaluateTrust(c, { registry: emptyTrustRegistry() });
        c.close();
        if (v.trust !== 'portable') throw new Error(`unexpected trust ${v.trust}`);
      },
    },
  ]);

  const B = Math.max(5, Math.floor(N / 5));
  const pkg = join(FIXTURES, 'sample-agent-package');
  const acxKey = generateSigningKey();
  const key = refKey();
  console.log('build (reference sample agent package → signed cartridge):');
  const [acxBuild, refBuild] = compare(R, Math.max(1, Math.round(B / R)), [
    {
      label: 'acx buildCartridge',
      fn: (i) => {
        buildCartridge({ dir: pkg, out: join(tmp, `acx-${i}.acx`), key: acxKey, publisher: 'io.github.example', overwrite: true });
      },
    },
    {
      label: 'reference exportPackageToCartridge',
      fn: (i) => {
        const { cart } = exportPackageToCartridge({ packageDir: pkg, outPath: join(tmp, `ref-${i}.acx`), key, publisherId: 'io.github.example', installationSalt: 'x'.repeat(32) });
        cart.close();
      },
    },
  ]);

  console.log('ratios (acx / reference, medians; below 1.00 means acx is faster):');
  ratio('verify', acxVerify!, refVerify!);
  ratio('build', acxBuild!, refBuild!);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
