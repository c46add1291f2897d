/**
 * Memory search benchmark: FTS5 (what MemoryStore.search runs) against a `LIKE '%term%'` scan
 * over the same table, in the same run. Prints absolute times and the ratio FTS / LIKE; no
 * thresholds. Run: `npx node bench/memory-search.ts [records] [queries]`.
 *
 * The corpus is deterministic (seeded PRNG): a Zipf-distributed vocabulary of common English
 * words and generated rarer words, so query terms range from very common to rare, as in
 * real memories, plus words it does not hold. The LIKE baseline is the naive implementation
 * (the first `limit` rows that contain the term, unranked, stopping early); FTS returns the
 * `limit` best by bm25 (see RANK_WINDOW in src/memory/store.ts). Expect LIKE to win on very
 * common terms, where it stops after a few rows, and FTS to win by far on rare and absent
 * terms, where LIKE reads the whole table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openMemoryStore } from '../src/memory/store.ts';

const RECORDS = Number(process.argv[2] ?? 100_000);
const QUERIES = Number(process.argv[3] ?? 100);
const LIMIT = 10;

/** mulberry32: small, fast, deterministic. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = rng(20250301);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const COMMON = (
  'the user said that we should deploy service on friday after review and before release because team ' +
  'prefers small changes with tests project meeting notes about customer billing database migration ' +
  'postgres cache latency error retry timeout config token rotation schedule weekly report owner ' +
  'frontend backend api endpoint request response queue worker job failed succeeded rollback incident ' +
  'alert dashboard metric budget cost invoice contract vendor laptop office city home travel flight ' +
  'hotel dinner birthday coffee tea prefers likes dislikes allergic morning evening timezone language'
).split(' ');
const SYLLABLES = 'ka lo mi ne ru sa te vo zi pra gle tor min dak ber shi quo lan fex ump ost ira'.split(' ');

function coinWord(): string {
  const parts = 2 + Math.floor(random() * 3);
  let word = '';
  for (let i = 0; i < parts; i++) word += pick(SYLLABLES);
  return word;
}

// Vocabulary ranked by frequency: common words first, then ~6000 coined words (names, jargon).
const vocabulary = [...new Set([...COMMON, ...Array.from({ length: 6000 }, coinWord)])];

/** Zipf-ish sample: rank r drawn with probability ~ 1/r. */
function zipfWord(): string {
  const n = vocabulary.length;
  const rank = Math.floor(Math.exp(random() * Math.log(n + 1))) - 1;
  return vocabulary[Math.min(n - 1, Math.max(0, rank))]!;
}

function sentence(): string {
  const length = 12 + Math.floor(random() * 45);
  const words: string[] = [];
  for (let i = 0; i < length; i++) words.push(zipfWord());
  const first = words[0]!;
  words[0] = first[0]!.toUpperCase() + first.slice(1);
  return `${words.join(' ')}.`;
}

const TOPICS = ['people', 'projects', 'notes', 'observed', 'prefs', 'incidents', 'meetings'];

function* records(count: number): Generator<{ key: string; value: string }> {
  for (let i = 0; i < count; i++) {
    const key = `${pick(TOPICS)}/${zipfWord()}-${zipfWord()}-${i}`;
    const value = random() < 0.3 ? `${sentence()} ${sentence()}` : sentence();
    yield { key, value };
  }
}

function time(fn: () => number): { ms: number; hits: number } {
  const start = performance.now();
  const hits = fn();
  return { ms: performance.now() - start, hits };
}

const dir = mkdtempSync(join(tmpdir(), 'acx-bench-memory-'));
const store = openMemoryStore(join(dir, 'memory.db'));
try {
  const build = time(() => {
    let written = 0;
    const batch: { key: string; value: string }[] = [];
    for (const record of records(RECORDS)) {
      batch.push(record);
      if (batch.length === 10_000) written += store.writeMany(batch.splice(0));
    }
    return written + store.writeMany(batch);
  });

  // Query terms: equal quarters from the common, middle and rare parts of the vocabulary, and
  // words the corpus does not hold (a misremembered name: LIKE must read every row for those).
  const bands = {
    common: vocabulary.slice(0, 100),
    middle: vocabulary.slice(100, 1000),
    rare: vocabulary.slice(1000),
    absent: Array.from({ length: 200 }, (_, i) => `${coinWord()}xq${i}`),
  };
  const perBand = Math.max(1, Math.floor(QUERIES / 4));
  const queries = Object.entries(bands).map(([band, words]) => ({ band, terms: Array.from({ length: perBand }, () => pick(words)) }));

  const like = store.database.prepare(
    "SELECT key, value FROM memories WHERE key LIKE ? ESCAPE '\\' OR value LIKE ? ESCAPE '\\' LIMIT ?",
  );
  const likeSearch = (term: string) => {
    const pattern = `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return like.all(pattern, pattern, LIMIT).length;
  };
  const ftsSearch = (term: string) => store.search(term, { limit: LIMIT }).length;
  // Warm both paths once so neither alone pays for cold pages.
  ftsSearch('warm');
  likeSearch('warm');

  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const total = queries.reduce((n, q) => n + q.terms.length, 0);
  console.log(`memory-search: ${build.hits} records built in ${(build.ms / 1000).toFixed(1)} s; ${total} single-term queries, limit ${LIMIT}`);
  let ftsTotal = 0;
  let likeTotal = 0;
  for (const { band, terms } of queries) {
    const fts = time(() => terms.reduce((hits, term) => hits + ftsSearch(term), 0));
    const scan = time(() => terms.reduce((hits, term) => hits + likeSearch(term), 0));
    ftsTotal += fts.ms;
    likeTotal += scan.ms;
    console.log(
      `  ${band.padEnd(6)} terms: fts5 ${ms(fts.ms)} (${fts.hits} hits)  like ${ms(scan.ms)} (${scan.hits} hits)  ratio fts/like ${(fts.ms / scan.ms).toFixed(4)}`,
    );
  }
  console.log(`  all    terms: fts5 ${ms(ftsTotal)} (${(ftsTotal / total).toFixed(3)} ms/query)  like ${ms(likeTotal)} (${(likeTotal / total).toFixed(3)} ms/query)`);
  console.log(`  ratio fts/like: ${(ftsTotal / likeTotal).toFixed(4)}`);
} finally {
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
