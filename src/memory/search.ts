import type { StatementSync } from '../store/sqlite.ts';
import { matchExpression, type QueryTerm } from './query.ts';

/**
 * Keyword search over the memory's FTS5 index at a cost bounded by the constants below, not by
 * how many records match. bm25() pays per match twice: before it scores its first row it counts
 * every match of every term of the query (to weigh the term's rarity), and then it scores each
 * row it is asked about (a couple of µs each). A term found in most of a million records would
 * make every search that names it take tens of milliseconds. So a search runs in three steps:
 *
 * 1. Each term's newest matches are counted, up to TERM_SAMPLE; past that, how many it matches
 *    in all is estimated from how far back the sample reached.
 * 2. The rarest terms, as many as bm25 can count within RANK_BUDGET matches in all, rank the
 *    query: bm25 scores the newest RANK_WINDOW records holding one of them. A term left out is
 *    more common than every term kept, so its weight in bm25 would be the smallest anyway.
 * 3. When no term is that rare, rarity cannot tell records apart: the records holding the most
 *    query terms come first, then the newest, among the newest records (back to where the
 *    densest term's sample reached).
 *
 * In a memory of fewer than RANK_BUDGET records every term ranks, and a query matching fewer
 * than RANK_WINDOW records is ranked exactly by bm25. "Newest" is by when a key was first
 * written (its rowid, the order of the FTS index). The index is only ever walked from its
 * newest end with a LIMIT: that stops early, where a rowid range (`rowid >= ?`) walks a
 * common term's whole doclist.
 */

/** How many of one term's newest matches are counted before the rest are estimated. */
export const TERM_SAMPLE = 200;
/** How many matches, summed over the terms that rank, bm25 may count for their rarity. */
export const RANK_BUDGET = 10_000;
/** How many of the newest matching records bm25 scores. */
export const RANK_WINDOW = 300;
/** Step 3 counts, per record, the query's least common terms, at most this many. */
const RECENT_TERMS = 8;
/** bm25 column weights: a word in the key counts twice a word in the value. */
const KEY_WEIGHT = 2.0;
const VALUE_WEIGHT = 1.0;

export type SearchPlan =
  /** No term matches anything. */
  | { strategy: 'none' }
  /** bm25 over the newest RANK_WINDOW matches of `terms`. */
  | { strategy: 'ranked'; terms: QueryTerm[] }
  /**
   * Most of `terms` held, then newest, among the records from rowid `since` on: there, the
   * newest TERM_SAMPLE matches of each term are all of its matches.
   */
  | { strategy: 'recent'; terms: QueryTerm[]; since: number };

/** A record a search found: its rowid in `memories` and its score, lower is better. */
export interface Candidate {
  id: number;
  /** bm25 when ranked; minus the number of query terms the record holds when recent. */
  score: number;
}

/** Compiles each distinct SQL text once (the caller keeps the cache). */
export type Prepare = (sql: string) => StatementSync;

/** Decides how `terms` are searched, from a bounded sample of each term's matches. */
export function planSearch(prepare: Prepare, terms: readonly QueryTerm[]): SearchPlan {
  const sample = prepare(
    `SELECT count(*) AS n, min(rowid) AS oldest FROM (
       SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ${TERM_SAMPLE}
     )`,
  );
  let span: { first: number; last: number } | undefined;
  const counted: { term: QueryTerm; matches: number; oldest: number }[] = [];
  for (const term of terms) {
    const { n, oldest } = sample.get(matchExpression([term])) as { n: number; oldest: number | null };
    if (n === 0 || oldest === null) continue;
    let matches = n;
    if (n === TERM_SAMPLE) {
      // The sample covers the records from `oldest` to the newest; assume the term is as dense
      // in the older ones. Deleted records leave gaps in the rowids: the estimate only chooses
      // a strategy, bm25 still counts exactly.
      span ??= prepare('SELECT (SELECT min(id) FROM memories) AS first, (SELECT max(id) FROM memories) AS last').get() as {
        first: number;
        last: number;
      };
      matches = Math.round((n * (span.last - span.first + 1)) / (span.last - oldest + 1));
    }
    counted.push({ term, matches, oldest });
  }
  if (counted.length === 0) return { strategy: 'none' };
  counted.sort((a, b) => a.matches - b.matches);
  const ranked: QueryTerm[] = [];
  let budget = RANK_BUDGET;
  for (const { term, matches } of counted) {
    if (matches > budget) break;
    ranked.push(term);
    budget -= matches;
  }
  if (ranked.length > 0) return { strategy: 'ranked', terms: ranked };
  const recent = counted.slice(0, RECENT_TERMS);
  return { strategy: 'recent', terms: recent.map((c) => c.term), since: Math.max(...recent.map((c) => c.oldest)) };
}

/**
 * The records `plan` finds, best first: at most RANK_WINDOW when ranked, at most the records
 * back to `since` when recent. Only the FTS index is read; the caller fetches the rows it keeps
 * and stops when it has enough (the candidates cross into JavaScript one at a time).
 */
export function candidates(prepare: Prepare, plan: SearchPlan): Iterable<Candidate> {
  if (plan.strategy === 'none') return [];
  if (plan.strategy === 'ranked') {
    // The inner query walks the index newest first and scores at most RANK_WINDOW rows; the
    // outer one sorts those by score. (ORDER BY rank over the whole match set scores every row.)
    const sql = `SELECT rowid AS id, score FROM (
        SELECT rowid, bm25(memories_fts, ${KEY_WEIGHT}, ${VALUE_WEIGHT}) AS score FROM memories_fts
        WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ${RANK_WINDOW}
      ) ORDER BY score, rowid DESC`;
    return prepare(sql).iterate(matchExpression(plan.terms)) as IterableIterator<unknown> as Iterable<Candidate>;
  }
  // Each term's newest TERM_SAMPLE matches (as sampled by planSearch), counted per record from
  // `since` on, where they are complete.
  const perTerm = plan.terms.map(
    () => `SELECT rowid FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ${TERM_SAMPLE})`,
  );
  const sql = `SELECT rowid AS id, -count(*) AS score FROM (${perTerm.join(' UNION ALL ')})
    WHERE rowid >= ? GROUP BY rowid ORDER BY score, rowid DESC`;
  return prepare(sql).iterate(...plan.terms.map((term) => matchExpression([term])), plan.since) as IterableIterator<unknown> as Iterable<Candidate>;
}
