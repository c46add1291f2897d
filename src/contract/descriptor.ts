import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { RoleTier } from './requirements.ts';

/**
 * The compliance descriptor (SPEC §8.5): what a host offered against one exact manifest, and the
 * verdict. It is persisted so the preflight self-check can re-read it before activation.
 */

export const COMPLIANCE_SCHEMA_VERSION = 'acx.harness.compliance.v1';
export const COMPLIANCE_MEDIA_TYPE = 'application/vnd.acx.harness-compliance.v1+json';

export interface ModelFacts {
  toolUse: boolean;
  contextWindowTokens: number;
  structuredOutput: boolean;
}

/** How a tool came to be bound: an explicit roleBindings entry, the contract's name, or structure. */
export type BindingVia = 'explicit' | 'name' | 'structure';

export interface RoleBinding {
  role: string;
  tier: RoleTier;
  /** The concrete host tool name, or null when nothing could be bound. */
  boundTool: string | null;
  via: BindingVia | null;
  /** Where the bound tool comes from ('builtin', 'mcp', ...). */
  source?: string;
  /** Every scope the host grants the bound tool. */
  scopesGranted: string[];
  satisfied: boolean;
  /** Why the binding is not satisfied (absent when it is). */
  reasons?: string[];
}

/** How a guardrail role (`acx:guardrail.<name>`) was bound: to a host guardrail of that name and kind, or to none. */
export interface GuardrailBinding {
  role: string;
  tier: RoleTier;
  kind: 'input' | 'output' | 'tool';
  /** The host guardrail's name, or null when the host binds none. */
  boundGuardrail: string | null;
  satisfied: boolean;
  /** Why the binding is not satisfied (absent when it is). */
  reasons?: string[];
}

/** One requirement the manifest makes, what the host offered, and whether it was met. */
export interface RequirementCheck {
  /** Stable requirement id, e.g. "tool:acx:execute", "model.minContextWindowTokens", "filesystem:fs.read". */
  id: string;
  requested: string;
  offered: string;
  met: boolean;
}

export interface ComplianceDescriptor {
  schemaVersion: typeof COMPLIANCE_SCHEMA_VERSION;
  mediaType: typeof COMPLIANCE_MEDIA_TYPE;
  requirementsHash: string;
  protocolRevision: string;
  model: ModelFacts;
  bindings: RoleBinding[];
  /** The manifest's guardrail roles and what the host bound to each (present when it names any). */
  guardrails?: GuardrailBinding[];
  /** Filesystem scopes the host granted. */
  filesystem: string[];
  /** Network scopes the host granted. */
  network: string[];
  verdict: 'accept' | 'refuse';
  /** Ids of the requirements that were not met; non-empty exactly when verdict is "refuse". */
  unmet: string[];
  /** Optional roles (tools and guardrails) left unbound: the agent runs degraded and should be told. */
  optionalAbsent: string[];
  /** The full checklist behind the verdict. */
  checks: RequirementCheck[];
}

const bindingSchema = {
  type: 'object',
  required: ['role', 'tier', 'boundTool', 'scopesGranted', 'satisfied'],
  properties: {
    role: { type: 'string', pattern: '^acx:[a-z][a-z0-9._-]*$' },
    tier: { enum: ['required', 'optional'] },
    boundTool: { type: ['string', 'null'] },
    via: { enum: ['explicit', 'name', 'structure', null] },
    source: { type: 'string' },
    scopesGranted: { type: 'array', items: { type: 'string' } },
    satisfied: { type: 'boolean' },
    reasons: { type: 'array', items: { type: 'string' } },
  },
};

export const COMPLIANCE_DESCRIPTOR_JSON_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'AcxHarnessCompliance',
  type: 'object',
  required: ['schemaVersion', 'requirementsHash', 'protocolRevision', 'model', 'bindings', 'verdict', 'unmet'],
  properties: {
    schemaVersion: { const: COMPLIANCE_SCHEMA_VERSION },
    mediaType: { const: COMPLIANCE_MEDIA_TYPE },
    requirementsHash: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
    protocolRevision: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' },
    model: {
      type: 'object',
      required: ['toolUse', 'contextWindowTokens'],
      properties: {
        toolUse: { type: 'boolean' },
        contextWindowTokens: { type: 'integer', minimum: 1 },
        structuredOutput: { type: 'boolean' },
      },
    },
    bindings: { type: 'array', items: bindingSchema },
    guardrails: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'tier', 'kind', 'boundGuardrail', 'satisfied'],
        properties: {
          role: { type: 'string', pattern: '^acx:guardrail\\.[a-z][a-z0-9_-]*$' },
          tier: { enum: ['required', 'optional'] },
          kind: { enum: ['input', 'output', 'tool'] },
          boundGuardrail: { type: ['string', 'null'] },
          satisfied: { type: 'boolean' },
          reasons: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    filesystem: { type: 'array', items: { type: 'string' } },
    network: { type: 'array', items: { type: 'string' } },
    verdict: { enum: ['accept', 'refuse'] },
    unmet: { type: 'array', items: { type: 'string' } },
    optionalAbsent: { type: 'array', items: { type: 'string' } },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'requested', 'offered', 'met'],
        properties: { id: { type: 'string' }, requested: { type: 'string' }, offered: { type: 'string' }, met: { type: 'boolean' } },
      },
    },
  },
} as const;

// Compiled on first check: most runs never produce a descriptor.
let compiledDescriptorValidator: ValidateFunction | undefined;
const descriptorValidator = (): ValidateFunction =>
  (compiledDescriptorValidator ??= new Ajv2020({ allErrors: true, strict: false }).compile(COMPLIANCE_DESCRIPTOR_JSON_SCHEMA));

/** Problems with a candidate descriptor value ("<pointer>: <problem>"); empty when well-formed. */
export function checkComplianceDescriptor(value: unknown): string[] {
  const validate = descriptorValidator();
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`);
}
