import { escapePointer, isPlainObject } from './requirements.ts';
import type { JsonSchema } from '../tools/schema.ts';

/**
 * The value-level rules of structural acceptance (subsumption.ts): which JSON types a node
 * allows, the finite values it can take, and whether a tool's string and number constraints
 * hold for every value a contract allows. Each rule returns the reasons it refuses, one line per
 * problem, prefixed with the input path it is about.
 */

export const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
export type TypeName = (typeof TYPES)[number];

// ---- type sets and finite values ------------------------------------------------------------

export function typeSet(node: JsonSchema): TypeName[] | undefined {
  const type = node.type;
  if (typeof type === 'string') return [type as TypeName];
  if (Array.isArray(type)) return type as TypeName[];
  return undefined;
}

export function toolAcceptsType(toolTypes: TypeName[], type: TypeName): boolean {
  return toolTypes.includes(type) || (type === 'integer' && toolTypes.includes('number'));
}

export function finiteValues(c: JsonSchema): unknown[] | undefined {
  const types = typeSet(c);
  const ofContractType = (v: unknown) => !types || types.some((type) => jsonTypeMatches(v, type));
  if ('const' in c) return [c.const].filter(ofContractType);
  if (Array.isArray(c.enum)) return c.enum.filter(ofContractType);
  if (types && types.every((type) => type === 'boolean' || type === 'null')) {
    return [...(types.includes('boolean') ? [true, false] : []), ...(types.includes('null') ? [null] : [])];
  }
  return undefined;
}

function jsonTypeMatches(value: unknown, type: TypeName): boolean {
  switch (type) {
    case 'null': return value === null;
    case 'boolean': return typeof value === 'boolean';
    case 'string': return typeof value === 'string';
    case 'number': return typeof value === 'number';
    case 'integer': return Number.isInteger(value);
    case 'array': return Array.isArray(value);
    case 'object': return isPlainObject(value);
  }
}

export function describeTypes(types: TypeName[] | undefined): string {
  return types ? types.join(' or ') : 'value';
}

export function describeFinite(t: JsonSchema): string {
  return 'const' in t ? JSON.stringify(t.const) : `the values ${JSON.stringify(t.enum)}`;
}

// ---- per-type value constraints ------------------------------------------------------------

export function stringRules(c: JsonSchema, t: JsonSchema, at: string): string[] {
  const reasons: string[] = [];
  if (typeof t.minLength === 'number' && t.minLength > 0 && !((c.minLength as number) >= t.minLength)) {
    reasons.push(`${where(at)}: the tool needs at least ${t.minLength} characters, the contract allows fewer`);
  }
  if (typeof t.maxLength === 'number' && !((c.maxLength as number) <= t.maxLength)) {
    reasons.push(`${where(at)}: the tool allows at most ${t.maxLength} characters, the contract allows more`);
  }
  if (typeof t.pattern === 'string' && c.pattern !== t.pattern) {
    reasons.push(`${where(at)}: the tool requires the pattern ${JSON.stringify(t.pattern)}, the contract does not guarantee it`);
  }
  return reasons;
}

export function numberRules(c: JsonSchema, t: JsonSchema, at: string, type: 'number' | 'integer'): string[] {
  const reasons: string[] = [];
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const [cMin, cExMin, cMax, cExMax] = [num(c.minimum), num(c.exclusiveMinimum), num(c.maximum), num(c.exclusiveMaximum)];
  const tMin = num(t.minimum);
  if (tMin !== undefined && !((cMin !== undefined && cMin >= tMin) || (cExMin !== undefined && cExMin >= tMin))) {
    reasons.push(`${where(at)}: the tool needs a value >= ${tMin}, the contract allows smaller`);
  }
  const tExMin = num(t.exclusiveMinimum);
  if (tExMin !== undefined && !((cMin !== undefined && cMin > tExMin) || (cExMin !== undefined && cExMin >= tExMin))) {
    reasons.push(`${where(at)}: the tool needs a value > ${tExMin}, the contract allows smaller`);
  }
  const tMax = num(t.maximum);
  if (tMax !== undefined && !((cMax !== undefined && cMax <= tMax) || (cExMax !== undefined && cExMax <= tMax))) {
    reasons.push(`${where(at)}: the tool needs a value <= ${tMax}, the contract allows larger`);
  }
  const tExMax = num(t.exclusiveMaximum);
  if (tExMax !== undefined && !((cMax !== undefined && cMax < tExMax) || (cExMax !== undefined && cExMax <= tExMax))) {
    reasons.push(`${where(at)}: the tool needs a value < ${tExMax}, the contract allows larger`);
  }
  const tStep = num(t.multipleOf);
  if (tStep !== undefined) {
    const cStep = num(c.multipleOf) ?? (type === 'integer' ? 1 : undefined);
    if (cStep === undefined || !isMultiple(cStep, tStep)) {
      reasons.push(`${where(at)}: the tool needs a multiple of ${tStep}, the contract does not guarantee it`);
    }
  }
  return reasons;
}

function isMultiple(value: number, step: number): boolean {
  const ratio = value / step;
  return Math.abs(ratio - Math.round(ratio)) < 1e-9;
}

// ---- input paths ---------------------------------------------------------------------------

export function join(at: string, name: string): string {
  return `${at}/${escapePointer(name)}`;
}

export function where(at: string): string {
  return at === '' ? '(input)' : at;
}
