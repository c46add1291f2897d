/**
 * Turns free text (a model's query, a user's turn) into an FTS5 MATCH expression that can never
 * be a syntax error. Nothing the user typed reaches FTS5 as syntax: the text is cut into word
 * tokens, each token becomes a double-quoted FTS5 string (quotes cannot occur inside a token),
 * and the strings are joined with OR so bm25 ranks the records that match more (and rarer)
 * terms first. `word*` keeps its meaning as a prefix query; every other operator character
 * (quotes, parentheses, `:`, `^`, `+`, `-`, NEAR, AND/OR/NOT) is plain text.
 */

/** Letters, digits and combining marks: close to what the unicode61 tokenizer keeps. */
const WORD = /([\p{L}\p{N}\p{M}]+)(\*?)/gu;

/** Bounds a query built from a long prompt; more terms add noise and cost, not recall. */
export const MAX_QUERY_TERMS = 32;
const MAX_TERM_CHARS = 64;

/** Words too common to say anything about which memory is meant. */
const STOPWORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing down during each few for from further had has have ' +
    'having he her here hers herself him himself his how i if in into is it its itself just me more most ' +
    'my myself no nor not now of off on once only or other our ours ourselves out over own same she should ' +
    'so some such than that the their theirs them themselves then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you ' +
    'your yours yourself yourselves tell know remember please hey hi hello ok okay'
  ).split(' '),
);

export interface FtsQueryOptions {
  /**
   * `fallback` (default): drop stopwords unless that leaves nothing, then keep them.
   * `strict`: drop stopwords even if nothing is left (used for automatic recall, where a
   * prompt like "what did you do?" should recall nothing rather than everything).
   * `keep`: never drop them.
   */
  stopwords?: 'fallback' | 'strict' | 'keep';
  maxTerms?: number;
}

export interface QueryTerm {
  text: string;
  prefix: boolean;
}

/** The word tokens of `text`, lower-cased, de-duplicated, in order of first appearance. */
export function queryTerms(text: string, options: FtsQueryOptions = {}): QueryTerm[] {
  const all: QueryTerm[] = [];
  const seen = new Set<string>();
  for (const match of text.matchAll(WORD)) {
    const word = match[1]!.toLowerCase().slice(0, MAX_TERM_CHARS);
    const prefix = match[2] === '*';
    const id = `${word}${prefix ? '*' : ''}`;
    if (seen.has(id)) continue;
    seen.add(id);
    all.push({ text: word, prefix });
  }
  const mode = options.stopwords ?? 'fallback';
  let terms = all;
  if (mode !== 'keep') {
    const content = all.filter((term) => term.prefix || !STOPWORDS.has(term.text));
    terms = content.length > 0 || mode === 'strict' ? content : all;
  }
  return terms.slice(0, options.maxTerms ?? MAX_QUERY_TERMS);
}

/** The MATCH expression for `text`, or undefined when it holds no searchable word. */
export function toFtsQuery(text: string, options: FtsQueryOptions = {}): string | undefined {
  const terms = queryTerms(text, options);
  return terms.length === 0 ? undefined : matchExpression(terms);
}

/** OR of quoted terms. Term text holds only letters, digits and marks, so quoting is safe. */
export function matchExpression(terms: readonly QueryTerm[]): string {
  return terms.map((term) => `"${term.text}"${term.prefix ? ' *' : ''}`).join(' OR ');
}
