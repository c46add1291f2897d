import { createHash } from 'node:crypto';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { defaultHarnessRequirements as seedHarnessRequirements } from '../agent-def/defaults.ts';
import { REQUIREMENTS_PATH } from '../agent-def/source.ts';
import { AcxError, errorMarker, setMarker } from '../core/errors.ts';
import { isCapabilityScope, type CapabilityScope } from '../tools/tool.ts';
import type { JsonSchema } from '../tools/schema.ts';
import { assertCompiles } from './ajv.ts';

/**
 * The harness-requirements manifest (cartridge spec §8): the roles, scopes and floors a host must
 * satisfy before a cartridge's ROM may activate. Parsed from its exact bytes because the
 * compliance descriptor binds to `sha256(bytes)`, not to any re-serialisation.
 */

export const HARNESS_REQUIREMENTS_SCHEMA_VERSION = 'acx.harness.v1';
export const HARNESS_REQUIREMENTS_MEDIA_TYPE = 'application/vnd.acx.harness-requirements.v1+json';
/** Where a cartridge keeps the manifest (the agent definition's path for it). */
export const HARNESS_REQUIREMENTS_PATH = REQUIREMENTS_PATH;

/** The required minimal contract (§8.4): absence of any one of these roles refuses activation. */
export const REQUIRED_ROLES = ['acx:execute', 'acx:dispatch', 'acx:memory.write', 'acx:search'] as const;

/** Read-only inventory roles that §8.4 says MUST be optional. */
export const INVENTORY_ROLES = ['acx:list_agents', 'acx:list_repos', 'acx:project_status', 'acx:portfolio_overview'] as const;

export type RoleTier = 'required' | 'optional';

export interface ToolRoleContract {
  role: string;
  tier: RoleTier;
  capabilityScopes: CapabilityScope[];
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** The role prefix of a guardrail a cartridge's agent needs: `acx:guardrail.<name>`. */
export const GUARDRAIL_ROLE_PREFIX = 'acx:guardrail.';
const GUARDRAIL_ROLE_PATTERN = '^acx:guardrail\\.[a-z][a-z0-9_-]*$';

/**
 * A guardrail the agent needs the host to run (issue 33): bound by the host to a guardrail of its
 * own with the role's name and kind, or reported absent — an optional one lets the agent run
 * degraded (the descriptor's optionalAbsent says so), a required one refuses activation.
 */
export interface GuardrailRequirement {
  role: string;
  tier: RoleTier;
  /** What it checks: the user's message (input), the final text (output), or each tool call (tool). */
  kind: 'input' | 'output' | 'tool';
  description: string;
}

/** The guardrail name a role asks for (`acx:guardrail.pii` → `pii`). */
export function guardrailNameOf(role: string): string {
  return role.slice(GUARDRAIL_ROLE_PREFIX.length);
}

export interface ExternalToolRequirement {
  bin: string;
  optional?: boolean;
}

export interface HarnessRequirements {
  schemaVersion: typeof HARNESS_REQUIREMENTS_SCHEMA_VERSION;
  mcp: { minProtocolRevision: string; preferredProtocolRevision?: string; requireStructuredContent?: boolean };
  model: { toolUse: boolean; minContextWindowTokens: number; structuredOutput?: boolean };
  requiredTools: ToolRoleContract[];
  optionalTools?: ToolRoleContract[];
  /** Filesystem capability scopes the host must grant (`fs.read`, `fs.write`, `x-…`). */
  filesystem?: CapabilityScope[];
  /** Network capability scopes the host must grant (`net.fetch`, `x-…`). */
  network?: CapabilityScope[];
  /** Emitted by the reference builder: binaries expected on PATH. Parsed and surfaced, not enforced. */
  externalTools?: ExternalToolRequirement[];
  /** Guardrails the host must (required) or may (optional) bind, negotiated like tools. */
  guardrails?: GuardrailRequirement[];
}

export interface ParsedHarnessRequirements {
  manifest: HarnessRequirements;
  /** The exact bytes that were parsed (a copy). */
  bytes: Uint8Array;
  /** "sha256:" + hex(sha256(bytes)). */
  requirementsHash: string;
}

export interface ManifestProblem {
  /** JSON pointer into the manifest ("" is the whole document). */
  path: string;
  problem: string;
}

const HARNESS_REQUIREMENTS_MARKER = errorMarker('HarnessRequirementsError');

/** The manifest is malformed: every problem found, each with the JSON pointer it is about. */
export class HarnessRequirementsError extends AcxError {
  readonly problems: ManifestProblem[];
  constructor(problems: ManifestProblem[], options: { hint?: string; cause?: unknown } = {}) {
    const lines = problems.map((p) => `  ${p.path || '/'}: ${p.problem}`).join('\n');
    super('harness-requirements-invalid', `The harness-requirements manifest is invalid:\n${lines}`, {
      hint:
        options.hint ??
        `Fix ${HARNESS_REQUIREMENTS_PATH} (schemaVersion ${HARNESS_REQUIREMENTS_SCHEMA_VERSION}, SPEC §8) and rebuild the cartridge.`,
      cause: options.cause,
    });
    setMarker(this, HARNESS_REQUIREMENTS_MARKER);
    this.name = 'HarnessRequirementsError';
    this.problems = problems;
  }

  static override isInstance(error: unknown): error is HarnessRequirementsError {
    return AcxError.hasMarker(error, HARNESS_REQUIREMENTS_MARKER);
  }
}

/** The manifest the reference builder emits (seed 000), as a fresh object each call. */
export function defaultHarnessRequirements(): HarnessRequirements {
  return seedHarnessRequirements() as unknown as HarnessRequirements;
}

/** The bytes acx writes for a manifest: 2-space JSON, UTF-8, like the reference builder. */
export function serializeHarnessRequirements(manifest: HarnessRequirements): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(manifest, null, 2));
}

export function requirementsHashOf(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(toBytes(bytes)).digest('hex')}`;
}

export function toBytes(input: Uint8Array | string): Uint8Array {
  return typeof input === 'string' ? new TextEncoder().encode(input) : input;
}

// ---- schema ---------------------------------------------------------------------------------

const REVISION_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';

const toolRoleContractSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['role', 'tier', 'capabilityScopes', 'name', 'description', 'inputSchema'],
  properties: {
    role: { type: 'string', pattern: '^acx:[a-z][a-z0-9._-]*$' },
    tier: { enum: ['required', 'optional'] },
    // The vocabulary (closed set + x-) is checked after the schema, for a clearer message.
    capabilityScopes: { type: 'array', minItems: 1, items: { type: 'string' } },
    name: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    inputSchema: { type: 'object' },
  },
};

/** JSON Schema (2020-12) of the manifest as acx accepts it. */
export const HARNESS_REQUIREMENTS_JSON_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://acx.dev/schemas/harness-requirements.v1.json',
  title: 'AcxHarnessRequirements',
  type: 'object',
  additionalProperties: false,
  required: ['schemaVersion', 'mcp', 'model', 'requiredTools'],
  properties: {
    schemaVersion: { const: HARNESS_REQUIREMENTS_SCHEMA_VERSION },
    mcp: {
      type: 'object',
      additionalProperties: false,
      required: ['minProtocolRevision'],
      properties: {
        minProtocolRevision: { type: 'string', pattern: REVISION_PATTERN },
        preferredProtocolRevision: { type: 'string', pattern: REVISION_PATTERN },
        requireStructuredContent: { type: 'boolean' },
      },
    },
    model: {
      type: 'object',
      additionalProperties: false,
      required: ['toolUse', 'minContextWindowTokens'],
      properties: {
        toolUse: { type: 'boolean' },
        minContextWindowTokens: { type: 'integer', minimum: 1 },
        structuredOutput: { type: 'boolean' },
      },
    },
    // The four required roles are checked by name after the schema, for a clearer message.
    requiredTools: { type: 'array', items: toolRoleContractSchema },
    optionalTools: { type: 'array', items: toolRoleContractSchema },
    filesystem: { type: 'array', items: { type: 'string' } },
    network: { type: 'array', items: { type: 'string' } },
    externalTools: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['bin'],
        properties: { bin: { type: 'string', minLength: 1 }, optional: { type: 'boolean' } },
      },
    },
    guardrails: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['role', 'tier', 'kind', 'description'],
        properties: {
          role: { type: 'string', pattern: GUARDRAIL_ROLE_PATTERN },
          tier: { enum: ['required', 'optional'] },
          kind: { enum: ['input', 'output', 'tool'] },
          description: { type: 'string' },
        },
      },
    },
  },
} as const;

/** Keys an older draft used that the spec explicitly replaced; named so the error can say so. */
const FORBIDDEN_KEYS: Record<string, string> = {
  tools: 'use "requiredTools" and "optionalTools"',
  fsScopes: 'use "filesystem"',
  netScopes: 'use "network"',
};

// Compiled on first parse: a run that never reads a manifest does not pay for it.
let compiledManifestValidator: ValidateFunction | undefined;
const manifestValidator = (): ValidateFunction =>
  (compiledManifestValidator ??= new Ajv2020({ allErrors: true, strict: false, validateFormats: false }).compile(HARNESS_REQUIREMENTS_JSON_SCHEMA));

// ---- parsing --------------------------------------------------------------------------------

/**
 * Parses and validates a manifest from its exact bytes (a string is taken as its UTF-8 bytes).
 * Throws HarnessRequirementsError listing every problem with its JSON pointer.
 */
export function parseHarnessRequirements(input: Uint8Array | string): ParsedHarnessRequirements {
  const bytes = Uint8Array.from(toBytes(input));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new HarnessRequirementsError([{ path: '', problem: 'not valid UTF-8' }], { cause });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new HarnessRequirementsError([{ path: '', problem: `not valid JSON (${(cause as Error).message})` }], { cause });
  }
  const problems = checkHarnessRequirements(value);
  if (problems.length > 0) throw new HarnessRequirementsError(problems);
  return { manifest: value as HarnessRequirements, bytes, requirementsHash: requirementsHashOf(bytes) };
}

/**
 * Every problem with a candidate manifest value; empty when it is valid. The schema and the
 * semantic rules are both applied in full, so one pass names every problem a user must fix.
 */
export function checkHarnessRequirements(value: unknown): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const add = (problem: ManifestProblem) => {
    if (!problems.some((p) => p.path === problem.path && p.problem === problem.problem)) problems.push(problem);
  };
  if (isPlainObject(value)) {
    for (const [key, replacement] of Object.entries(FORBIDDEN_KEYS)) {
      if (key in value) add({ path: `/${key}`, problem: `forbidden key "${key}" (${replacement})` });
    }
  }
  const validateManifest = manifestValidator();
  if (!validateManifest(value)) {
    for (const error of validateManifest.errors ?? []) {
      const problem = describeAjvError(error);
      // A forbidden key is already reported with its replacement; "unknown key" would repeat it.
      if (problem && !(problem.path.slice(1) in FORBIDDEN_KEYS && problem.problem.startsWith('unknown key'))) add(problem);
    }
  }
  if (isPlainObject(value)) semanticProblems(value).forEach(add);
  return problems;
}

function describeAjvError(error: ErrorObject): ManifestProblem | undefined {
  const path = error.instancePath;
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = (error.params as { additionalProperty: string }).additionalProperty;
      return { path: `${path}/${escapePointer(key)}`, problem: `unknown key "${key}"` };
    }
    case 'required':
      return { path, problem: `missing required key "${(error.params as { missingProperty: string }).missingProperty}"` };
    case 'const':
      return { path, problem: `must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}` };
    case 'enum':
      return { path, problem: `must be one of ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues)}` };
    case 'pattern':
      if (path.endsWith('ProtocolRevision')) return { path, problem: 'must be an MCP revision date YYYY-MM-DD (e.g. "2024-11-05")' };
      if (path.startsWith('/guardrails/')) return { path, problem: 'must be a guardrail role, acx:guardrail.<name> (e.g. "acx:guardrail.pii")' };
      if (path.endsWith('/role')) return { path, problem: 'must be a role id in the acx: namespace, e.g. "acx:execute"' };
      return { path, problem: error.message ?? 'does not match the expected pattern' };
    case 'type':
      if (path === '/model/minContextWindowTokens') {
        return { path, problem: 'must be an integer token count (a floor), never a model id' };
      }
      return { path, problem: `must be ${(error.params as { type: string }).type}` };
    default:
      return { path, problem: error.message ?? 'invalid' };
  }
}

/**
 * The rules the schema cannot express. They read only the parts of the manifest that have the
 * right shape: a part the schema rejected is reported once, by the schema.
 */
function semanticProblems(manifest: Record<string, unknown>): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const mcp = isPlainObject(manifest.mcp) ? manifest.mcp : {};
  for (const field of ['minProtocolRevision', 'preferredProtocolRevision'] as const) {
    const revision = mcp[field];
    if (typeof revision === 'string' && new RegExp(REVISION_PATTERN).test(revision) && !isCalendarDate(revision)) {
      problems.push({ path: `/mcp/${field}`, problem: `"${revision}" is not a real calendar date` });
    }
  }
  const seen = new Map<string, string>();
  const lists: Array<['requiredTools' | 'optionalTools', RoleTier]> = [
    ['requiredTools', 'required'],
    ['optionalTools', 'optional'],
  ];
  for (const [list, tier] of lists) {
    arrayAt(manifest, list).forEach((contract, index) => {
      if (!isPlainObject(contract)) return;
      const at = `/${list}/${index}`;
      const { role, tier: declared, capabilityScopes, inputSchema } = contract;
      if ((declared === 'required' || declared === 'optional') && declared !== tier) {
        problems.push({ path: `${at}/tier`, problem: `role ${String(role)} is listed in ${list} but has tier "${declared}"` });
      }
      if (typeof role === 'string') {
        if (tier === 'optional' && (REQUIRED_ROLES as readonly string[]).includes(role)) {
          problems.push({ path: `${at}/role`, problem: `${role} belongs to the required minimal contract and cannot be optional` });
        }
        if (tier === 'required' && (INVENTORY_ROLES as readonly string[]).includes(role)) {
          problems.push({ path: `${at}/role`, problem: `${role} is a read-only inventory role and MUST be optional` });
        }
        const previous = seen.get(role);
        if (previous !== undefined) problems.push({ path: `${at}/role`, problem: `duplicate role ${role} (already declared at ${previous})` });
        else seen.set(role, at);
      }
      if (Array.isArray(capabilityScopes)) {
        capabilityScopes.forEach((scope, i) => {
          if (typeof scope === 'string' && !isCapabilityScope(scope)) problems.push({ path: `${at}/capabilityScopes/${i}`, problem: unknownScope(scope) });
        });
        if (new Set(capabilityScopes).size !== capabilityScopes.length) {
          problems.push({ path: `${at}/capabilityScopes`, problem: 'lists a scope more than once' });
        }
      }
      if (isPlainObject(inputSchema)) problems.push(...contractSchemaProblems(inputSchema as JsonSchema, `${at}/inputSchema`));
    });
  }
  arrayAt(manifest, 'guardrails').forEach((guardrail, index) => {
    if (!isPlainObject(guardrail) || typeof guardrail.role !== 'string') return;
    const at = `/guardrails/${index}/role`;
    const previous = seen.get(guardrail.role);
    if (previous !== undefined) problems.push({ path: at, problem: `duplicate role ${guardrail.role} (already declared at ${previous})` });
    else seen.set(guardrail.role, `/guardrails/${index}`);
  });
  if (Array.isArray(manifest.requiredTools)) {
    const declared = manifest.requiredTools.filter(isPlainObject).map((contract) => contract.role);
    for (const role of REQUIRED_ROLES) {
      if (!declared.includes(role)) {
        problems.push({ path: '/requiredTools', problem: `missing required role ${role} (the four required roles are ${REQUIRED_ROLES.join(', ')})` });
      }
    }
  }
  const areas: Array<['filesystem' | 'network', RegExp]> = [
    ['filesystem', /^fs\./],
    ['network', /^net\./],
  ];
  for (const [area, family] of areas) {
    arrayAt(manifest, area).forEach((scope, i) => {
      if (typeof scope !== 'string') return;
      const path = `/${area}/${i}`;
      if (!isCapabilityScope(scope)) problems.push({ path, problem: unknownScope(scope) });
      else if (!family.test(scope) && !scope.startsWith('x-')) problems.push({ path, problem: `"${scope}" is not a ${area} scope` });
    });
  }
  return problems;
}

/** The array under `key`, or none when it is absent or not an array (the schema reports that). */
function arrayAt(manifest: Record<string, unknown>, key: string): unknown[] {
  const value = manifest[key];
  return Array.isArray(value) ? value : [];
}

function contractSchemaProblems(schema: JsonSchema, path: string): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  if (schema.type !== 'object') problems.push({ path: `${path}/type`, problem: 'a tool inputSchema must have type "object" (MCP)' });
  try {
    assertCompiles(schema);
  } catch (error) {
    problems.push({ path, problem: `not a valid JSON Schema 2020-12: ${(error as Error).message}` });
  }
  return problems;
}

function unknownScope(scope: string): string {
  return `unknown capability scope "${scope}" (allowed: exec, dispatch, memory.write, memory.read, search, knowledge.write, fs.read, fs.write, net.fetch, or a vendor scope starting with "x-")`;
}

// ---- small shared helpers ---------------------------------------------------------------------

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when "YYYY-MM-DD" names a real date (2024-02-30 does not). */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Drops a `$schema` declaration so draft-07 style schemas (common from MCP servers) compile under
 * the 2020-12 validator instead of failing on an unknown meta-schema.
 */
export function stripMetaSchema(schema: JsonSchema): JsonSchema {
  if (!('$schema' in schema)) return schema;
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

/** The contracts of a manifest, required ones first, in manifest order. */
export function allContracts(manifest: HarnessRequirements): ToolRoleContract[] {
  return [...manifest.requiredTools, ...(manifest.optionalTools ?? [])];
}
