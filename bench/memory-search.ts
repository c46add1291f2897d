/**
 * Memory search benchmark: what MemoryStore.search runs (FTS5, see src/memory/search.ts) against
 * a `LIKE '%term%'` scan of the same table, in the same run, query by query.
 *
 *   npx node bench/memory-search.ts [records=1000000] [queries=200] [--like=20] [--fresh]
 *
 * The corpus (bench/support/memory-corpus.ts) is deterministic, Zipf-distributed, and cached in
 * the temp directory: the first run at a size builds it (about 5 minutes for a million records
 * on a 2-core machine), later runs reuse it; `--fresh` rebuilds it.
 *
 * Query classes, `queries` each, single terms: common (the 100 most frequent words), middle
 * (the next 900), rare (the rest), absent (words the corpus does not hold: a misremembered name,
 * for which LIKE must read every row). A fifth class, prompt, is for reading only: sentences of
 * 6 to 10 words drawn like the corpus's own, as automatic recall searches a user's turn.
 *
 * The LIKE anchor is the naive implementation: the first `limit` rows containing a term (any
 * term, for prompts), unranked, stopping early. Expect it to win on very common terms, where it
 * stops after a few rows, and to lose by far on rare and absent ones, where it reads the table
 * (about a second a query at a million records). So LIKE runs only the first `--like` queries of
 * each class, alternating with FTS5 on the same query; the ratio compares those pairs, and the
 * FTS5 percentiles are over all `queries`.
 *
 * Goals (printed PASS/FAIL, exit 0 either way): every single-term class at p95 <= 10 ms (wall
 * time), and over all single-term queries FTS5 at least 10x faster than LIKE (ratio fts/like
 * <= 0.1). The p95 of CPU time per query is printed beside it: on a loaded machine wall times
 * grow with other processes' load, CPU times far less.
 */
import { performance } from 'node:perf_hooks';
import { openMemoryStore } from '../src/memory/store.ts';
import { corpus, ensureCorpus, rng } from './support/memory-corpus.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const RECORDS = Number(args[0] ?? 1_000_000);
const QUERIES = Number(args[1] ?? 200);
const LIKE_QUERIES = Number(process.argv.find((a) => a.startsWith('--like='))?.slice('--like='.length) ?? 20);
const FRESH = process.argv.includes('--fresh');
const LIMIT = 10;
const P95_GOAL_MS = 10;
const RATIO_GOAL = 0.1;

const built = ensureCorpus(RECORDS, { fresh: FRESH });
const store = openMemoryStore(built.path);
try {
  const { vocabulary, absentWord } = corpus();
  const random = rng(7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const zipfWord = (): string => vocabulary[Math.min(vocabulary.length - 1, Math.floor(Math.exp(random() * Math.log(vocabulary.length + 1))) - 1)]!;
  const perClass = Math.max(1, QUERIES);
  const likePerClass = Math.max(1, Math.min(perClass, LIKE_QUERIES));
  const classes = [
    { name: 'common', goal: true, queries: Array.from({ length: perClass }, () => pick(vocabulary.slice(0, 100))) },
    { name: 'middle', goal: true, queries: Array.from({ length: perClass }, () => pick(vocabulary.slice(100, 1000))) },
    { name: 'rare', goal: true, queries: Array.from({ length: perClass }, () => pick(vocabulary.slice(1000))) },
    { name: 'absent', goal: true, queries: Array.from({ length: perClass }, (_, i) => absentWord(i)) },
    {
      name: 'prompt',
      goal: false,
      queries: Array.from({ length: perClass }, () => Array.from({ length: 6 + Math.floor(random() * 5) }, zipfWord).join(' ')),
    },
  ];

  const likeStatements = new Map<number, ReturnType<typeof store.database.prepare>>();
  const likeSearch = (query: string): number => {
    const terms = [...new Set(query.split(' '))];
    let statement = likeStatements.get(terms.length);
    if (!statement) {
      const any = terms.map(() => "key LIKE ? ESCAPE '\\' OR value LIKE ? ESCAPE '\\'").join(' OR ');
      statement = store.database.prepare(`SELECT key, value FROM memories WHERE ${any} LIMIT ?`);
      likeStatements.set(terms.length, statement);
    }
    const patterns = terms.flatMap((term) => {
      const pattern = `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      return [pattern, pattern];
    });
    return statement.all(...patterns, LIMIT).length;
  };
  const ftsSearch = (query: string): number => store.search(query, { limit: LIMIT }).length;

  // Read the whole file once, so that no query pays for pages the one before it did not touch.
  store.database.prepare('SELECT sum(length(value)) FROM memories').get();
  store.database.prepare('SELECT sum(length(block)) FROM memories_fts_data').get();
  for (const { queries } of classes) for (const query of queries.slice(0, 3)) ftsSearch(query);

  const how = built.builtMs === undefined ? `cached at ${built.path}` : `built in ${(built.builtMs / 1000).toFixed(0)} s, cached at ${built.path}`;
  console.log(`memory-search: ${store.count()} records (${how}); ${perClass} queries a class (LIKE on ${likePerClass}), limit ${LIMIT}`);
  console.log('  class   fts5 p50 / p95 / max ms   cpu p95   like mean ms   fts/like   hits fts / like   plans');

  const ms = (value: number) => value.toFixed(2).padStart(6);
  const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  let ftsGoalTotal = 0;
  let likeGoalTotal = 0;
  const failures: string[] = [];
  for (const { name, goal, queries } of classes) {
    const fts: number[] = [];
    const ftsCpu: number[] = [];
    const like: number[] = [];
    let ftsHits = 0;
    let likeHits = 0;
    const plans = new Map<string, number>();
    const runFts = (query: string) => {
      const cpu = process.cpuUsage();
      const start = performance.now();
      const hits = ftsSearch(query);
      fts.push(performance.now() - start);
      const used = process.cpuUsage(cpu);
      ftsCpu.push((used.user + used.system) / 1000);
      return hits;
    };
    const runLike = (query: string) => {
      const start = performance.now();
      likeHits += likeSearch(query);
      like.push(performance.now() - start);
    };
    queries.forEach((query, i) => {
      const strategy = store.searchPlan(query).strategy;
      plans.set(strategy, (plans.get(strategy) ?? 0) + 1);
      if (i >= likePerClass) return void runFts(query);
      // Alternate which side goes first, so that load from other processes falls on both alike.
      if (i % 2 === 0) (ftsHits += runFts(query), runLike(query));
      else (runLike(query), (ftsHits += runFts(query)));
    });
    const paired = fts.filter((_, i) => i < likePerClass).reduce((a, b) => a + b, 0);
    const sorted = [...fts].sort((a, b) => a - b);
    const likeSum = like.reduce((a, b) => a + b, 0);
    const p95 = quantile(sorted, 0.95);
    const cpuP95 = quantile([...ftsCpu].sort((a, b) => a - b), 0.95);
    if (goal) {
      ftsGoalTotal += paired;
      likeGoalTotal += likeSum;
      if (p95 > P95_GOAL_MS) failures.push(`${name} p95 ${p95.toFixed(2)} ms > ${P95_GOAL_MS} ms`);
    }
    const planText = [...plans].map(([strategy, n]) => `${strategy} ${n}`).join(', ');
    console.log(
      `  ${name.padEnd(6)}  ${ms(quantile(sorted, 0.5))} / ${ms(p95)} / ${ms(sorted.at(-1)!)}   ${ms(cpuP95)}    ${ms(likeSum / like.length)}       ${(paired / likeSum).toFixed(4)}   ${String(ftsHits).padStart(4)} / ${String(likeHits).padEnd(4)}      ${planText}${goal ? '' : '  (not in the goal)'}`,
    );
  }
  const ratio = ftsGoalTotal / likeGoalTotal;
  if (ratio > RATIO_GOAL) failures.push(`overall fts/like ${ratio.toFixed(4)} > ${RATIO_GOAL}`);
  console.log(
    `  single-term pairs: fts5 ${(ftsGoalTotal / (4 * likePerClass)).toFixed(3)} ms/query, like ${(likeGoalTotal / (4 * likePerClass)).toFixed(3)} ms/query; ratio fts/like ${ratio.toFixed(4)} (${(1 / ratio).toFixed(0)}x faster)`,
  );
  console.log(
    failures.length === 0
      ? `PASS: every class p95 <= ${P95_GOAL_MS} ms; fts/like <= ${RATIO_GOAL}`
      : `FAIL: ${failures.join('; ')}`,
  );
} finally {
  store.close();
}
