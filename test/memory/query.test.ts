import { describe, expect, it } from 'vitest';
import { MAX_QUERY_TERMS, queryTerms, toFtsQuery } from '../../src/memory/query.ts';

describe('toFtsQuery', () => {
  it('quotes every word and joins them with OR', () => {
    expect(toFtsQuery('Dallas Texas')).toBe('"dallas" OR "texas"');
  });

  it('treats operators and punctuation as text', () => {
    expect(toFtsQuery('"a" AND (b OR c) NEAR(d e) key:f ^g -h')).toBe('"b" OR "c" OR "near" OR "d" OR "e" OR "key" OR "f" OR "g" OR "h"');
    expect(toFtsQuery('NOT')).toBe('"not"');
  });

  it('keeps word* as a prefix query and ignores a bare star', () => {
    expect(toFtsQuery('tex* *')).toBe('"tex" *');
  });

  it('returns undefined when nothing searchable is left', () => {
    expect(toFtsQuery('')).toBeUndefined();
    expect(toFtsQuery('?!()"":*')).toBeUndefined();
    expect(toFtsQuery('what did you do?', { stopwords: 'strict' })).toBeUndefined();
  });

  it('drops stopwords unless nothing else is left', () => {
    expect(toFtsQuery('what is my home city?')).toBe('"home" OR "city"');
    expect(toFtsQuery('the who')).toBe('"the" OR "who"');
  });

  it('lower-cases, de-duplicates, keeps unicode words and bounds the term count', () => {
    expect(toFtsQuery('Café café CAFÉ 東京')).toBe('"café" OR "東京"');
    const many = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    expect(queryTerms(many)).toHaveLength(MAX_QUERY_TERMS);
  });
});
