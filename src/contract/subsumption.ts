import canonicalize from 'canonicalize';
import { isCodeSchema, normalizeSchema, type InputSchema, type JsonSchema } from '../tools/schema.ts';
import { compileTransient, metaSchemaErrors, type TransientValidator } from './ajv.ts';
import { isPlainObject, stripMetaSchema } from './requirements.ts';
import { TYPES, type TypeName, typeSet, toolAcceptsType, finiteValues, describeTypes, describeFinite, stringRules, numberRules, join, where } from './schema-values.ts';

/**
 * Structural acceptance (SPEC §8.5 step 3): does a host tool's advertised inputSchema accept every
 * input a tool-role contract's inputSchema describes? The spec leaves the algorithm open; the rules
 * below are acx's, documented in docs/contract.md. The check is sound but not complete: when it
 * says "accepting", every contract-valid call (restricted to the properties the contract declares)
 * is valid for the tool; when it cannot prove that, it refuses and says why.
 */

export interface SubsumptionResult {
  accepting: boolean;
  /** One line per problem, prefixed with the input path it is about ("(input)" is the root). */
  reasons: string[];
}

type Node = JsonSchema | boolean;


/** Keywords that constrain values. A node without any of them accepts every value. */
const VALIDATION_KEYWORDS = new Set([
  'type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'patternProperties',
  'unevaluatedProperties', 'propertyNames', 'minProperties', 'maxProperties', 'dependentRequired',
  'dependentSchemas', 'dependencies', 'items', 'prefixItems', 'additionalItems', 'unevaluatedItems',
  'contains', 'minContains', 'maxContains', 'minItems', 'maxItems', 'uniqueItems', 'minLength',
  'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref', '$dynamicRef', '$recursiveRef',
]);

/** Tool-side keywords whose effect acx does not reason about: their presence refuses acceptance. */
const UNSUPPORTED_TOOL_KEYWORDS = [
  'not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas', 'dependencies', 'propertyNames',
  'contains', 'minContains', 'maxContains', 'unevaluatedItems', 'additionalItems', '$dynamicRef', '$recursiveRef',
];

const MAX_DEPTH = 64;

export function isStructurallyAccepting(toolSchema: InputSchema | boolean, contractSchema: JsonSchema | boolean): SubsumptionResult {
  const toolRoot: Node = typeof toolSchema === 'boolean' ? toolSchema : toJsonSchema(toolSchema);
  const contractRoot: Node = typeof contractSchema === 'boolean' ? contractSchema : stripMetaSchema(contractSchema);
  const compileError = compileErrorOf(toolRoot);
  if (compileError !== undefined) {
    return { accepting: false, reasons: [`(input): the tool's inputSchema is not a valid JSON Schema: ${compileError}`] };
  }
  const checker = new Checker(toolRoot, contractRoot);
  try {
    const reasons = checker.run();
    return { accepting: reasons.length === 0, reasons };
  } finally {
    checker.dispose();
  }
}

// A handshake compares each tool with several contracts; compile each tool schema once.
const compileErrors = new WeakMap<object, string | undefined>();

function compileErrorOf(schema: Node): string | undefined {
  if (typeof schema === 'boolean') return undefined;
  if (compileErrors.has(schema)) return compileErrors.get(schema);
  // The meta-schema check is enough here: $refs are resolved (or refused) by the walker itself.
  const error = metaSchemaErrors(schema);
  compileErrors.set(schema, error);
  return error;
}

const converted = new WeakMap<object, JsonSchema>();

function toJsonSchema(schema: InputSchema): JsonSchema {
  let json = converted.get(schema);
  if (!json) {
    json = stripMetaSchema(isCodeSchema(schema) ? normalizeSchema(schema).jsonSchema : schema);
    converted.set(schema, json);
  }
  return json;
}

class Checker {
  private readonly toolRoot: Node;
  private readonly contractRoot: Node;
  private readonly validators = new Map<Node, TransientValidator | null>();
  /** Pairs already being checked: recursive schemas are accepted coinductively. */
  private readonly inProgress = new Map<Node, Set<Node>>();

  constructor(toolRoot: Node, contractRoot: Node) {
    this.toolRoot = toolRoot;
    this.contractRoot = contractRoot;
  }

  dispose(): void {
    for (const compiled of this.validators.values()) compiled?.dispose();
    this.validators.clear();
  }

  run(): string[] {
    return this.check(this.contractRoot, this.toolRoot, '', { presence: true, root: true, depth: 0 });
  }

  private check(cIn: Node, tIn: Node, at: string, mode: { presence: boolean; root: boolean; depth: number }): string[] {
    if (mode.depth > MAX_DEPTH) return [`${where(at)}: schemas nest too deeply to compare`];
    let c: Node;
    let t: Node;
    try {
      c = this.resolveContract(cIn);
      t = this.resolveTool(tIn);
    } catch (error) {
      return [`${where(at)}: ${(error as Error).message}`];
    }
    if (c === false) return []; // the contract never sends a value here
    if (t === false) return [`${where(at)}: the tool accepts no value here`];
    if (!mode.root && isUnconstrained(t)) return [];
    if (c === true || isUnconstrained(c)) {
      if (mode.root) c = {}; // a root without keywords still means "an object with no declared parameters"
      else return [`${where(at)}: the contract allows any value, the tool restricts it`];
    }
    const seen = this.inProgress.get(c) ?? new Set<Node>();
    if (seen.has(t)) return [];
    seen.add(t);
    this.inProgress.set(c, seen);
    try {
      return this.checkResolved(c, t, at, mode);
    } finally {
      seen.delete(t);
    }
  }

  private checkResolved(c: JsonSchema, t: Node, at: string, mode: { presence: boolean; root: boolean; depth: number }): string[] {
    const next = { presence: true, root: false, depth: mode.depth + 1 };

    // Contract combinators: allOf narrows (merge it in), anyOf/oneOf widen (each branch must pass).
    if (Array.isArray(c.allOf)) {
      const { allOf, ...own } = c;
      return this.check((allOf as Node[]).reduce<Node>((acc, b) => mergeContract(acc, b), own), t, at, { ...mode, depth: mode.depth + 1 });
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(c[key])) {
        const { [key]: branches, ...own } = c;
        return (branches as Node[]).flatMap((b) => this.check(mergeContract(own, b), t, at, { ...mode, depth: mode.depth + 1 }));
      }
    }

    // A finite contract (const/enum, or only booleans/null) is checked value by value, exactly.
    const finite = finiteValues(c);
    if (finite) return this.checkValues(finite, t, at);

    if (t === true) return mode.root ? this.checkResolved(c, {}, at, mode) : [];
    if (t === false) return [`${where(at)}: the tool accepts no value here`];

    // Presence is judged on the whole tool node before it is split into combinator branches.
    if (mode.presence && hasCombinator(t) && mayBeObject(c)) {
      const declared = this.declaredNames(t, 0);
      const missing = requiredOf(c).filter((p) => !declared.has(p) && !matchesPattern(t, p));
      if (missing.length > 0) return missing.map((p) => `${where(join(at, p))}: the contract requires "${p}" but the tool does not declare it`);
    }
    const branchMode = { presence: false, root: mode.root, depth: mode.depth + 1 };
    if (Array.isArray(t.allOf)) {
      const { allOf, ...own } = t;
      return [...this.check(c, own, at, branchMode), ...(allOf as Node[]).flatMap((b) => this.check(c, b, at, branchMode))];
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(t[key])) {
        const { [key]: branches, ...own } = t;
        const ownReasons = this.check(c, own, at, branchMode);
        const branchReasons = (branches as Node[]).map((b) => this.check(c, b, at, branchMode));
        if (branchReasons.some((r) => r.length === 0)) return ownReasons;
        return [...ownReasons, `${where(at)}: no alternative of the tool's ${key} accepts the contract (${branchReasons.map((r) => r[0]).join('; ')})`];
      }
    }

    const unsupported = UNSUPPORTED_TOOL_KEYWORDS.filter((k) => k in t);
    if (unsupported.length > 0) {
      return [`${where(at)}: the tool schema uses ${unsupported.map((k) => `"${k}"`).join(', ')}, which acx cannot prove accepts the contract`];
    }
    if ('enum' in t || 'const' in t) {
      return [`${where(at)}: the tool accepts only ${describeFinite(t)}, the contract allows any ${describeTypes(typeSet(c))}`];
    }

    // MCP input schemas are objects at the root, whether or not the contract says so.
    const contractTypes = typeSet(c) ?? (mode.root ? (['object'] as TypeName[]) : [...TYPES]);
    const toolTypes = typeSet(t);
    const reasons: string[] = [];
    for (const type of contractTypes) {
      if (type === 'integer' && contractTypes.includes('number')) continue; // covered by number
      if (toolTypes && !toolAcceptsType(toolTypes, type)) {
        reasons.push(`${where(at)}: the contract sends ${typeSet(c) ? type : `any type (including ${type})`}, the tool accepts only ${describeTypes(toolTypes)}`);
        continue;
      }
      if (type === 'object') reasons.push(...this.objectRules(c, t, at, mode.presence, next));
      else if (type === 'array') reasons.push(...this.arrayRules(c, t, at, next));
      else if (type === 'string') reasons.push(...stringRules(c, t, at));
      else if (type === 'number' || type === 'integer') reasons.push(...numberRules(c, t, at, type));
    }
    return reasons;
  }

  private objectRules(c: JsonSchema, t: JsonSchema, at: string, presence: boolean, next: { presence: boolean; root: boolean; depth: number }): string[] {
    const reasons: string[] = [];
    const cProps = isPlainObject(c.properties) ? (c.properties as Record<string, Node>) : {};
    const tProps = isPlainObject(t.properties) ? (t.properties as Record<string, Node>) : {};
    const cRequired = requiredOf(c);
    const names = [...new Set([...Object.keys(cProps), ...cRequired])];
    for (const name of names) {
      const path = join(at, name);
      const declared = Object.hasOwn(tProps, name) || matchesPattern(t, name);
      if (presence && cRequired.includes(name) && !declared) {
        reasons.push(`${where(path)}: the contract requires "${name}" but the tool does not declare it`);
        continue;
      }
      const toolProperty = this.toolPropertySchema(t, name);
      if (toolProperty === false) {
        reasons.push(`${where(path)}: the contract may send "${name}" but the tool forbids it (additionalProperties: false)`);
        continue;
      }
      reasons.push(...this.check(Object.hasOwn(cProps, name) ? cProps[name]! : true, toolProperty, path, next));
    }
    for (const name of requiredOf(t)) {
      if (!cRequired.includes(name)) {
        reasons.push(`${where(join(at, name))}: the tool requires "${name}" but the contract does not guarantee it`);
      }
    }
    if (typeof t.minProperties === 'number' && cRequired.length < t.minProperties && !((c.minProperties as number) >= t.minProperties)) {
      reasons.push(`${where(at)}: the tool needs at least ${t.minProperties} properties, the contract guarantees ${cRequired.length}`);
    }
    if (typeof t.maxProperties === 'number' && names.length > t.maxProperties && !((c.maxProperties as number) <= t.maxProperties)) {
      reasons.push(`${where(at)}: the tool allows at most ${t.maxProperties} properties, the contract may send ${names.length}`);
    }
    return reasons;
  }

  /** The schema the tool applies to property `name`; `false` when it forbids it. */
  private toolPropertySchema(t: JsonSchema, name: string): Node {
    const props = isPlainObject(t.properties) ? (t.properties as Record<string, Node>) : {};
    const applying: Node[] = [];
    if (Object.hasOwn(props, name)) applying.push(props[name]!);
    if (isPlainObject(t.patternProperties)) {
      for (const [pattern, schema] of Object.entries(t.patternProperties as Record<string, Node>)) {
        if (safeRegExp(pattern)?.test(name)) applying.push(schema);
      }
    }
    if (applying.length === 0) {
      // unevaluatedProperties is treated like additionalProperties (conservative under allOf).
      const extra = t.additionalProperties ?? t.unevaluatedProperties;
      if (extra === undefined) return true;
      return extra as Node;
    }
    return applying.length === 1 ? applying[0]! : { allOf: applying };
  }

  private arrayRules(c: JsonSchema, t: JsonSchema, at: string, next: { presence: boolean; root: boolean; depth: number }): string[] {
    const reasons: string[] = [];
    const path = `${at}/*`;
    if ('prefixItems' in t || Array.isArray(t.items)) {
      return [`${where(at)}: the tool uses tuple items (prefixItems), which acx cannot prove accepts the contract`];
    }
    const toolItems: Node = (t.items as Node | undefined) ?? true;
    const contractItems: Node[] = [];
    if (Array.isArray(c.prefixItems)) contractItems.push(...(c.prefixItems as Node[]));
    else if (Array.isArray(c.items)) contractItems.push(...(c.items as Node[]));
    if (!Array.isArray(c.items)) contractItems.push((c.items as Node | undefined) ?? true);
    for (const item of contractItems) reasons.push(...this.check(item, toolItems, path, next));
    if (typeof t.minItems === 'number' && t.minItems > 0 && !((c.minItems as number) >= t.minItems)) {
      reasons.push(`${where(at)}: the tool needs at least ${t.minItems} items, the contract guarantees ${(c.minItems as number) ?? 0}`);
    }
    if (typeof t.maxItems === 'number' && !((c.maxItems as number) <= t.maxItems)) {
      reasons.push(`${where(at)}: the tool allows at most ${t.maxItems} items, the contract ${typeof c.maxItems === 'number' ? `allows ${c.maxItems}` : 'sets no limit'}`);
    }
    if (t.uniqueItems === true && c.uniqueItems !== true) {
      reasons.push(`${where(at)}: the tool requires unique items, the contract does not`);
    }
    return reasons;
  }

  private checkValues(values: unknown[], t: Node, at: string): string[] {
    const validate = this.validatorFor(t)?.validate;
    if (!validate) return [`${where(at)}: the tool schema here cannot be compiled to check the contract's values`];
    return values
      .filter((value) => !validate(value))
      .map((value) => `${where(at)}: the contract may send ${JSON.stringify(value)}, the tool rejects it`);
  }

  /** A validator for one tool sub-schema, with the tool root's $defs/definitions in reach. */
  private validatorFor(t: Node): TransientValidator | null {
    if (this.validators.has(t)) return this.validators.get(t)!;
    let compiled: TransientValidator | null = null;
    try {
      const root = isPlainObject(this.toolRoot) ? this.toolRoot : {};
      const wrapper: JsonSchema = { allOf: [t] };
      if (root.$defs !== undefined) wrapper.$defs = root.$defs;
      if (root.definitions !== undefined) wrapper.definitions = root.definitions;
      compiled = compileTransient(wrapper);
    } catch {
      compiled = null;
    }
    this.validators.set(t, compiled);
    return compiled;
  }

  /** Every property name the tool node declares, through refs and combinators. */
  private declaredNames(t: Node, depth: number): Set<string> {
    const names = new Set<string>();
    if (typeof t === 'boolean' || depth > MAX_DEPTH) return names;
    let node: Node = t;
    try {
      node = this.resolveTool(t);
    } catch {
      return names;
    }
    if (typeof node === 'boolean') return names;
    if (isPlainObject(node.properties)) for (const key of Object.keys(node.properties)) names.add(key);
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
      if (Array.isArray(node[key])) for (const b of node[key] as Node[]) for (const n of this.declaredNames(b, depth + 1)) names.add(n);
    }
    return names;
  }

  private resolveContract(node: Node): Node {
    let current = node;
    for (let hops = 0; typeof current !== 'boolean' && typeof current.$ref === 'string'; hops++) {
      if (hops > MAX_DEPTH) throw new Error('the contract schema has a $ref cycle');
      const { $ref, ...siblings } = current;
      current = mergeContract(siblings, resolvePointer(this.contractRoot, $ref as string, 'contract'));
    }
    return current;
  }

  private resolveTool(node: Node): Node {
    if (typeof node === 'boolean' || typeof node.$ref !== 'string') return node;
    const { $ref, ...siblings } = node;
    const target = resolvePointer(this.toolRoot, $ref as string, 'tool');
    // 2020-12: a $ref applies alongside its siblings, i.e. allOf.
    return isUnconstrained(siblings) ? this.resolveTool(target) : { allOf: [siblings, target] };
  }
}

// ---- schema plumbing ------------------------------------------------------------------------

function isUnconstrained(node: Node): boolean {
  if (node === true) return true;
  if (node === false) return false;
  return !Object.keys(node).some((key) => VALIDATION_KEYWORDS.has(key));
}

function hasCombinator(t: Node): t is JsonSchema {
  return typeof t !== 'boolean' && (Array.isArray(t.allOf) || Array.isArray(t.anyOf) || Array.isArray(t.oneOf));
}

function mayBeObject(c: JsonSchema): boolean {
  const types = typeSet(c);
  return !types || types.includes('object');
}

function requiredOf(node: Node): string[] {
  return typeof node !== 'boolean' && Array.isArray(node.required) ? (node.required as string[]) : [];
}

function matchesPattern(t: Node, name: string): boolean {
  if (typeof t === 'boolean' || !isPlainObject(t.patternProperties)) return false;
  return Object.keys(t.patternProperties).some((pattern) => safeRegExp(pattern)?.test(name) ?? false);
}

function safeRegExp(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}

/**
 * Merges two contract schemas that both apply (allOf / $ref siblings / a union branch with its
 * parent). Keywords that cannot be combined keep the first side: dropping a contract constraint
 * only widens the contract, which keeps the acceptance check sound.
 */
function mergeContract(a: Node, b: Node): Node {
  if (a === false || b === false) return false;
  if (a === true) return b;
  if (b === true) return a;
  const out: JsonSchema = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (!(key in out)) {
      out[key] = value;
      continue;
    }
    if (key === 'required' && Array.isArray(value) && Array.isArray(out.required)) {
      out.required = [...new Set([...(out.required as string[]), ...(value as string[])])];
    } else if (key === 'properties' && isPlainObject(value) && isPlainObject(out.properties)) {
      const merged: Record<string, Node> = { ...(out.properties as Record<string, Node>) };
      for (const [name, schema] of Object.entries(value as Record<string, Node>)) {
        merged[name] = Object.hasOwn(merged, name) ? { allOf: [merged[name]!, schema] } : schema;
      }
      out.properties = merged;
    } else if (key === 'type') {
      const left = typeSet(out) ?? [...TYPES];
      const right = typeSet(b) ?? [...TYPES];
      const both = left.flatMap((x): TypeName[] => {
        if (right.includes(x)) return [x];
        if (x === 'number' && right.includes('integer')) return ['integer'];
        if (x === 'integer' && right.includes('number')) return ['integer'];
        return [];
      });
      if (both.length === 0) return false;
      out.type = [...new Set(both)];
    } else if (key === 'enum' && Array.isArray(value) && Array.isArray(out.enum)) {
      const right = new Set(value.map((v) => canonicalize(v)));
      out.enum = (out.enum as unknown[]).filter((v) => right.has(canonicalize(v)));
    } else if (key === 'allOf' && Array.isArray(value) && Array.isArray(out.allOf)) {
      out.allOf = [...(out.allOf as Node[]), ...(value as Node[])];
    }
  }
  return out;
}

function resolvePointer(root: Node, ref: string, side: 'tool' | 'contract'): Node {
  if (!ref.startsWith('#')) throw new Error(`the ${side} schema uses a non-local $ref "${ref}", which acx does not follow`);
  let current: unknown = root;
  const pointer = decodeURIComponent(ref.slice(1));
  if (pointer !== '') {
    for (const raw of pointer.replace(/^\//, '').split('/')) {
      const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isPlainObject(current) && !Array.isArray(current)) throw new Error(`the ${side} schema's $ref "${ref}" does not resolve`);
      current = (current as Record<string, unknown>)[segment];
    }
  }
  if (typeof current !== 'boolean' && !isPlainObject(current)) throw new Error(`the ${side} schema's $ref "${ref}" does not resolve`);
  return current as Node;
}
