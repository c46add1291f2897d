/**
 * The memory-search benchmark's corpus: a deterministic (seeded PRNG) set of memory records
 * whose words follow a Zipf distribution over common English words and generated rarer words,
 * so query terms range from very common to rare, as in real memories.
 *
 * Building a million records takes minutes, so the built database is cached in the temp
 * directory under a name derived from everything that decides its content: the generator's
 * version and parameters and the memory schema. A build writes a temporary file and renames it
 * into place when complete, so an interrupted build is never reused.
 */
import { createHash } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MEMORY_MIGRATIONS, openMemoryStore } from '../../src/memory/store.ts';

/** Bump when the generator below changes what it produces. */
const GENERATOR_VERSION = 1;
const SEED = 20250301;
const CODED_WORDS = 6000;
const BATCH = 10_000;

/** mulberry32: small, fast, deterministic. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON = (
  'the user said that we should deploy service on friday after review and before release because team ' +
  'prefers small changes with tests project meeting notes about customer billing database migration ' +
  'postgres cache latency error retry timeout config token rotation schedule weekly report owner ' +
  'frontend backend api endpoint request response queue worker job failed succeeded rollback incident ' +
  'alert dashboard metric budget cost invoice contract vendor laptop office city home travel flight ' +
  'hotel dinner birthday coffee tea prefers likes dislikes allergic morning evening timezone language'
).split(' ');
const SYLLABLES = 'ka lo mi ne ru sa te vo zi pra gle tor min dak ber shi quo lan fex ump ost ira'.split(' ');
const TOPICS = ['people', 'projects', 'notes', 'observed', 'prefs', 'incidents', 'meetings'];

export interface Corpus {
  /** Words ranked by frequency: the most common first. */
  vocabulary: readonly string[];
  /** A word made like the rare ones but (almost surely) absent from the corpus. */
  absentWord(i: number): string;
  records(count: number): Generator<{ key: string; value: string }>;
}

/** A fresh generator: the same seed always yields the same vocabulary, then the same records. */
export function corpus(seed = SEED): Corpus {
  const random = rng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const coinWord = (): string => {
    const parts = 2 + Math.floor(random() * 3);
    let word = '';
    for (let i = 0; i < parts; i++) word += pick(SYLLABLES);
    return word;
  };
  const vocabulary = [...new Set([...COMMON, ...Array.from({ length: CODED_WORDS }, coinWord)])];
  /** Zipf-ish sample: rank r drawn with probability ~ 1/r. */
  const zipfWord = (): string => {
    const n = vocabulary.length;
    const rank = Math.floor(Math.exp(random() * Math.log(n + 1))) - 1;
    return vocabulary[Math.min(n - 1, Math.max(0, rank))]!;
  };
  const sentence = (): string => {
    const length = 12 + Math.floor(random() * 45);
    const words: string[] = [];
    for (let i = 0; i < length; i++) words.push(zipfWord());
    const first = words[0]!;
    words[0] = first[0]!.toUpperCase() + first.slice(1);
    return `${words.join(' ')}.`;
  };
  return {
    vocabulary,
    // Letters and digits in one token: no corpus word has a digit (the numbers in keys stand alone).
    absentWord: (i) => `${coinWord()}xq${i}`,
    *records(count) {
      for (let i = 0; i < count; i++) {
        const key = `${pick(TOPICS)}/${zipfWord()}-${zipfWord()}-${i}`;
        const value = random() < 0.3 ? `${sentence()} ${sentence()}` : sentence();
        yield { key, value };
      }
    },
  };
}

/** Where the database of `records` records is cached; the name changes with anything that changes its content. */
export function corpusPath(records: number): string {
  const schema = MEMORY_MIGRATIONS.map(String).join('\n');
  const id = createHash('sha256')
    .update(JSON.stringify({ GENERATOR_VERSION, SEED, CODED_WORDS, records, schema }))
    .digest('hex')
    .slice(0, 16);
  return join(tmpdir(), `acx-bench-memory-${records}-${id}.db`);
}

export interface BuiltCorpus {
  path: string;
  /** Build time in ms, or undefined when the cached database was reused. */
  builtMs: number | undefined;
}

/** The cached database of `records` records, built first if it is missing (or `fresh` is set). */
export function ensureCorpus(records: number, options: { fresh?: boolean } = {}): BuiltCorpus {
  const path = corpusPath(records);
  if (existsSync(path) && !options.fresh) return { path, builtMs: undefined };
  const partial = `${path}.building-${process.pid}`;
  const start = performance.now();
  const store = openMemoryStore(partial);
  try {
    const batch: { key: string; value: string }[] = [];
    for (const record of corpus().records(records)) {
      batch.push(record);
      if (batch.length === BATCH) store.writeMany(batch.splice(0));
    }
    store.writeMany(batch);
    // Fold the WAL into the file so the rename moves one self-contained database.
    store.database.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } catch (error) {
    store.close();
    removeDatabase(partial);
    throw error;
  }
  store.close();
  removeDatabase(path);
  renameSync(partial, path);
  removeDatabase(partial);
  return { path, builtMs: performance.now() - start };
}

function removeDatabase(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}
