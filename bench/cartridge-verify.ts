/**
 * Verify and build time of acx against the reference implementation (lboel/acx), same inputs,
 * same process, same run. Prints per-operation times and acx/reference ratios (< 1 = acx faster).
 *
 *   npx node bench/cartridge-verify.ts            (ACX_REFERENCE_DIR defaults to ../reference-acx)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildCartridge } from '../src/cartridge/build.ts';
import { generateSigningKey } from '../src/cartridge/keys.ts';
import { verifyCartridge } from '../src/cartridge/verify.ts';

const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REFERENCE_DIR = resolve(PROJECT, process.env.ACX_REFERENCE_DIR ?? '../reference-acx');
const FIXTURES = join(PROJECT, 'test', 'fixtures', 'reference');

if (!existsSync(join(REFERENCE_DIR, 'src', 'trust.mjs'))) {
  console.log(`skip: reference implementation not found at ${REFERENCE_DIR}`);
  console.log(`      get it with: git clone https://github.com/lboel/acx ${REFERENCE_DIR}   (or set ACX_REFERENCE_DIR)`);
  process.exit(0);
}

const refUrl = (f: string) => pathToFileURL(join(REFERENCE_DIR, 'src', f)).href;
const { Cartridge: RefCartridge } = await import(refUrl('container.mjs'));
const { evaluateTrust, emptyTrustRegistry } = await import(refUrl('trust.mjs'));
const { generateSigningKey: refKey } = await import(refUrl('sign.mjs'));
const { exportPackageToCartridge } = await import(refUrl('export.mjs'));

function time(label: string, iterations: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(3, iterations); i++) fn(-1 - i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn(i);
  const ms = Number(process.hrtime.bigint() - start) / 1e6 / iterations;
  console.log(`  ${label.padEnd(34)} ${ms.toFixed(3).padStart(9)} ms/op  (${iterations} runs)`);
  return ms;
}

const tmp = mkdtempSync(join(tmpdir(), 'acx-bench-'));
try {
  const cartridges = ['rex-calder.acx', 'ada-ridge.acx'].map((f) => join(FIXTURES, f));
  const N = Number(process.env.BENCH_ITERATIONS ?? 100);
  console.log('verify (reference registry cartridges, full ROM recompute + DSSE):');
  const acxVerify = time('acx verifyCartridge', N, (i) => {
    const v = verifyCartridge(cartridges[Math.abs(i) % 2]!);
    if (v.verdict !== 'portable') throw new Error(`unexpected verdict ${v.verdict}`);
  });
  const refVerify = time('reference open + evaluateTrust', N, (i) => {
    const c = RefCartridge.open(cartridges[Math.abs(i) % 2]!, { readonly: true });
    const v = evaluateTrust(c, { registry: emptyTrustRegistry() });
    c.close();
    if (v.trust !== 'portable') throw new Error(`unexpected trust ${v.trust}`);
  });

  const B = Math.max(5, Math.floor(N / 5));
  const pkg = join(FIXTURES, 'sample-agent-package');
  const acxKey = generateSigningKey();
  const key = refKey();
  console.log('build (reference sample agent package → signed cartridge):');
  const acxBuild = time('acx buildCartridge', B, (i) => {
    buildCartridge({ dir: pkg, out: join(tmp, `acx-${i}.acx`), key: acxKey, publisher: 'io.github.example', overwrite: true });
  });
  const refBuild = time('reference exportPackageToCartridge', B, (i) => {
    const { cart } = exportPackageToCartridge({ packageDir: pkg, outPath: join(tmp, `ref-${i}.acx`), key, publisherId: 'io.github.example', installationSalt: 'x'.repeat(32) });
    cart.close();
  });

  console.log('ratios (acx / reference; below 1.00 means acx is faster):');
  console.log(`  verify  ${(acxVerify / refVerify).toFixed(2)}`);
  console.log(`  build   ${(acxBuild / refBuild).toFixed(2)}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
