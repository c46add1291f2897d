import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isStructurallyAccepting } from '../../src/contract/subsumption.ts';

type S = Record<string, unknown>;
const obj = (properties: S, required: string[] = [], extra: S = {}): S => ({ type: 'object', properties, required, ...extra });

// [label, contract inputSchema, tool inputSchema]
const accepting: Array<[string, S, S | boolean]> = [
  ['identical schemas', obj({ command: { type: 'string' } }, ['command']), obj({ command: { type: 'string' } }, ['command'])],
  ['tool declares more optional properties', obj({ q: { type: 'string' } }, ['q']), obj({ q: { type: 'string' }, limit: { type: 'integer' } }, ['q'])],
  ['contract integer into tool number', obj({ n: { type: 'integer' } }, ['n']), obj({ n: { type: 'number' } }, ['n'])],
  ['contract type within a tool type union', obj({ v: { type: 'string' } }, ['v']), obj({ v: { type: ['string', 'null'] } }, ['v'])],
  ['tool property without a type accepts anything', obj({ v: { type: 'array', items: { type: 'string' } } }, ['v']), obj({ v: { description: 'anything' } }, ['v'])],
  ['nested objects, recursively', obj({ opts: obj({ depth: { type: 'integer' } }, ['depth']) }, ['opts']), obj({ opts: obj({ depth: { type: 'number' }, verbose: { type: 'boolean' } }, ['depth']) }, ['opts'])],
  ['arrays by items', obj({ tags: { type: 'array', items: { type: 'string' } } }, ['tags']), obj({ tags: { type: 'array', items: { type: ['string', 'number'] } } }, ['tags'])],
  ['contract enum inside tool enum', obj({ mode: { enum: ['a', 'b'] } }, ['mode']), obj({ mode: { type: 'string', enum: ['a', 'b', 'c'] } }, ['mode'])],
  ['contract enum into a plain tool type', obj({ mode: { type: 'string', enum: ['a', 'b'] } }, ['mode']), obj({ mode: { type: 'string' } }, ['mode'])],
  ['contract const accepted by tool enum', obj({ kind: { const: 'x' } }, ['kind']), obj({ kind: { enum: ['x', 'y'] } }, ['kind'])],
  ['contract boolean into tool enum of both booleans', obj({ f: { type: 'boolean' } }, ['f']), obj({ f: { enum: [true, false] } }, ['f'])],
  ['tool bounds looser than the contract', obj({ n: { type: 'integer', minimum: 1, maximum: 10 } }, ['n']), obj({ n: { type: 'integer', minimum: 0, maximum: 100 } }, ['n'])],
  ['string length within the tool limits', obj({ s: { type: 'string', minLength: 2, maxLength: 20 } }, ['s']), obj({ s: { type: 'string', minLength: 1, maxLength: 64 } }, ['s'])],
  ['additionalProperties:false but every contract property declared', obj({ a: { type: 'string' }, b: { type: 'integer' } }, ['a']), obj({ a: { type: 'string' }, b: { type: 'integer' } }, ['a'], { additionalProperties: false })],
  ['contract optional property the tool does not declare (extras allowed)', obj({ a: { type: 'string' }, hint: { type: 'string' } }, ['a']), obj({ a: { type: 'string' } }, ['a'])],
  ['tool properties through a local $ref', obj({ a: { type: 'string' } }, ['a']), { type: 'object', required: ['a'], properties: { a: { $ref: '#/$defs/text' } }, $defs: { text: { type: 'string' } } }],
  ['contract anyOf, each branch accepted', obj({ v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } }, ['v']), obj({ v: { type: ['string', 'number'] } }, ['v'])],
  ['tool anyOf with one accepting branch', obj({ v: { type: 'string' } }, ['v']), obj({ v: { anyOf: [{ type: 'integer' }, { type: 'string' }] } }, ['v'])],
  ['tool schema from zod', obj({ command: { type: 'string' } }, ['command']), z.object({ command: z.string(), cwd: z.string().optional() }) as unknown as S],
  ['draft-07 tool schema', obj({ q: { type: 'string' } }, ['q']), { $schema: 'http://json-schema.org/draft-07/schema#', ...obj({ q: { type: 'string' } }, ['q']) }],
  ['no-argument contract, no-argument tool', { type: 'object', properties: {} }, { type: 'object' }],
];

const rejecting: Array<[string, S, S | boolean, RegExp]> = [
  ['required property missing from the tool', obj({ command: { type: 'string' } }, ['command']), obj({ cmd: { type: 'string' } }, ['cmd']), /\/command: the contract requires "command" but the tool does not declare it/],
  ['tool declares nothing at all', obj({ command: { type: 'string' } }, ['command']), {}, /\/command: the contract requires "command"/],
  ['type mismatch', obj({ q: { type: 'string' } }, ['q']), obj({ q: { type: 'integer' } }, ['q']), /\/q: the contract sends string, the tool accepts only integer/],
  ['contract number into tool integer', obj({ n: { type: 'number' } }, ['n']), obj({ n: { type: 'integer' } }, ['n']), /\/n: the contract sends number, the tool accepts only integer/],
  ['contract untyped, tool typed', obj({ v: {} }, ['v']), obj({ v: { type: 'string' } }, ['v']), /\/v: the contract allows any value, the tool restricts it/],
  ['nested mismatch', obj({ opts: obj({ depth: { type: 'string' } }, ['depth']) }, ['opts']), obj({ opts: obj({ depth: { type: 'integer' } }, ['depth']) }, ['opts']), /\/opts\/depth: the contract sends string/],
  ['nested required property missing', obj({ opts: obj({ depth: { type: 'integer' } }, ['depth']) }, ['opts']), obj({ opts: obj({}, []) }, ['opts']), /\/opts\/depth: the contract requires "depth"/],
  ['array items mismatch', obj({ tags: { type: 'array', items: { type: 'string' } } }, ['tags']), obj({ tags: { type: 'array', items: { type: 'integer' } } }, ['tags']), /\/tags\/\*: the contract sends string/],
  ['contract enum value outside the tool enum', obj({ mode: { enum: ['a', 'z'] } }, ['mode']), obj({ mode: { enum: ['a', 'b'] } }, ['mode']), /\/mode: the contract may send "z", the tool rejects it/],
  ['open contract string into a tool enum', obj({ mode: { type: 'string' } }, ['mode']), obj({ mode: { type: 'string', enum: ['a'] } }, ['mode']), /\/mode: the tool accepts only the values \["a"\]/],
  ['tool additionalProperties:false lacks a contract property', obj({ a: { type: 'string' }, hint: { type: 'string' } }, ['a']), obj({ a: { type: 'string' } }, ['a'], { additionalProperties: false }), /\/hint: the contract may send "hint" but the tool forbids it/],
  ['tool requires a property the contract does not provide', obj({ q: { type: 'string' } }, ['q']), obj({ q: { type: 'string' }, index: { type: 'string' } }, ['q', 'index']), /\/index: the tool requires "index" but the contract does not guarantee it/],
  ['tool requires a property the contract only makes optional', obj({ q: { type: 'string' }, k: { type: 'integer' } }, ['q']), obj({ q: { type: 'string' }, k: { type: 'integer' } }, ['q', 'k']), /\/k: the tool requires "k"/],
  ['contract optional property with an incompatible tool type', obj({ a: { type: 'string' }, n: { type: 'string' } }, ['a']), obj({ a: { type: 'string' }, n: { type: 'integer' } }, ['a']), /\/n: the contract sends string/],
  ['tool minimum tighter than the contract', obj({ n: { type: 'integer' } }, ['n']), obj({ n: { type: 'integer', minimum: 1 } }, ['n']), /\/n: the tool needs a value >= 1/],
  ['tool maxLength with an unbounded contract', obj({ s: { type: 'string' } }, ['s']), obj({ s: { type: 'string', maxLength: 10 } }, ['s']), /\/s: the tool allows at most 10 characters/],
  ['tool pattern the contract does not guarantee', obj({ s: { type: 'string' } }, ['s']), obj({ s: { type: 'string', pattern: '^[a-z]+$' } }, ['s']), /\/s: the tool requires the pattern/],
  ['tool uses a keyword acx cannot reason about', obj({ s: { type: 'string' } }, ['s']), obj({ s: { type: 'string', not: { const: '' } } }, ['s']), /\/s: the tool schema uses "not"/],
  ['tool anyOf with no accepting branch', obj({ v: { type: 'string' } }, ['v']), obj({ v: { anyOf: [{ type: 'integer' }, { type: 'boolean' }] } }, ['v']), /\/v: no alternative of the tool's anyOf accepts the contract/],
  ['contract anyOf branch the tool rejects', obj({ v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } }, ['v']), obj({ v: { type: 'string' } }, ['v']), /\/v: the contract sends integer/],
  ['tool schema is false', obj({ a: { type: 'string' } }, ['a']), false, /\(input\): the tool accepts no value here/],
  ['tool root is not an object schema', obj({ a: { type: 'string' } }, ['a']), { type: 'string' }, /\(input\): the contract sends object, the tool accepts only string/],
  ['tool schema does not compile', obj({ a: { type: 'string' } }, ['a']), obj({ a: { type: 'strng' } }, ['a']), /not a valid JSON Schema/],
  ['tool $ref that does not resolve', obj({ a: { type: 'string' } }, ['a']), obj({ a: { $ref: 'https://example.com/s.json' } }, ['a']), /not a valid JSON Schema|non-local \$ref/],
];

describe('structural acceptance (subsumption)', () => {
  it.each(accepting)('accepts: %s', (_label, contract, tool) => {
    const result = isStructurallyAccepting(tool as S, contract);
    expect(result.reasons).toEqual([]);
    expect(result.accepting).toBe(true);
  });

  it.each(rejecting)('rejects: %s', (_label, contract, tool, reason) => {
    const result = isStructurallyAccepting(tool as S, contract);
    expect(result.accepting).toBe(false);
    expect(result.reasons.some((r) => reason.test(r)), result.reasons.join('\n')).toBe(true);
  });

  it('reports every problem, not only the first', () => {
    const contract = obj({ a: { type: 'string' }, b: { type: 'integer' } }, ['a', 'b']);
    const tool = obj({ a: { type: 'integer' } }, ['a', 'c'], { additionalProperties: false });
    const { reasons } = isStructurallyAccepting(tool, contract);
    expect(reasons).toEqual([
      '/a: the contract sends string, the tool accepts only integer',
      '/b: the contract requires "b" but the tool does not declare it',
      '/c: the tool requires "c" but the contract does not guarantee it',
    ]);
  });

  it('handles recursive schemas without looping', () => {
    const node = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['name'] };
    expect(isStructurallyAccepting(node, node).accepting).toBe(true);
  });
});
