import { z } from 'zod';
import type { SpeechMode } from '../engine/brief.ts';
import { isBuiltinName, KNOWN_BUILTINS } from '../tools/builtin/names.ts';
import { PERMISSION_MODES, type PermissionMode } from '../tools/permission.ts';
import { definitionError } from './errors.ts';

/**
 * agent.json (docs/agent-layout.md): the one schema both a directory and a cartridge's
 * rom/agent.json are checked against. Every field is checked when present; what a run needs and
 * the file leaves out has a default (`id` from the directory name, `name` from the id, version
 * 0.0.0). Packing asks for more (`packingProblems`): a cartridge needs a name, a SemVer version
 * and a description in its meta.
 */

export const AGENT_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const MODEL = /^[a-z0-9][a-z0-9._-]*:\S+$/;

const SPEECH_PROBLEM = '"speech" must be "final-text", "direct", "unspoken" or {"tool": "<name>"}';
const SPEECH = z.custom<AgentManifest['speech']>(
  (v) => v === 'final-text' || v === 'direct' || v === 'unspoken' || (typeof v === 'object' && v !== null && typeof (v as { tool?: unknown }).tool === 'string' && (v as { tool: string }).tool !== ''),
  SPEECH_PROBLEM,
);
const MEMORY_PROVIDER_PROBLEM = 'memory.provider must be "sqlite", "semantic" or "module#export" (a module of your own)';
const MEMORY_EMBEDDING_PROBLEM = 'memory.embedding must be "local-hash-128" or "provider:model-id"';
const STEPS = (field: string) => z.number({ error: `${field} must be an integer from 1 to 1000` }).int(`${field} must be an integer from 1 to 1000`).min(1, `${field} must be an integer from 1 to 1000`).max(1000, `${field} must be an integer from 1 to 1000`);

const AGENT_JSON = z
  .object({
    id: z.string({ error: 'id must be a lowercase slug ([a-z0-9][a-z0-9._-]{0,63})' }).regex(AGENT_ID, 'id must be a lowercase slug ([a-z0-9][a-z0-9._-]{0,63})').optional(),
    name: z.string({ error: 'name must be 1-120 characters' }).trim().min(1, 'name must be 1-120 characters').max(120, 'name must be 1-120 characters').optional(),
    version: z.string({ error: 'version must be SemVer (e.g. 1.0.0)' }).regex(SEMVER, 'version must be SemVer (e.g. 1.0.0)').optional(),
    description: z.string({ error: 'description must be 1-500 characters' }).refine((d) => d.trim() !== '' && d.length <= 500, 'description must be 1-500 characters').optional(),
    publisher: z.string({ error: 'publisher must be a reverse-DNS string' }).optional(),
    model: z.string({ error: 'model must look like "provider:model-id"' }).regex(MODEL, 'model must look like "provider:model-id"').optional(),
    speech: SPEECH.optional(),
    stepBudget: STEPS('stepBudget').optional(),
    maxSteps: STEPS('maxSteps').optional(),
    permissionMode: z.enum(PERMISSION_MODES as [PermissionMode, ...PermissionMode[]], { error: `permissionMode must be one of ${PERMISSION_MODES.join(', ')}` }).optional(),
    tools: z
      .array(z.string(), { error: 'tools must be an array of built-in tool names' })
      .superRefine((tools, ctx) => {
        const unknown = tools.filter((t) => !isBuiltinName(t));
        if (unknown.length) ctx.addIssue({ code: 'custom', message: `tools names unknown built-in(s) ${unknown.join(', ')} (known: ${KNOWN_BUILTINS.join(', ')}; MCP servers go in mcp/*.json)` });
      })
      .optional(),
    license: z.string({ error: 'license must be a string' }).optional(),
    tags: z.array(z.string(), { error: 'tags must be an array of strings' }).optional(),
    authors: z.array(z.union([z.string(), z.object({ name: z.string(), url: z.string().optional() })]), { error: 'authors must be a list of names or {name, url}' }).optional(),
    homepage: z.string({ error: 'homepage must be a URL string' }).optional(),
    memory: z
      .strictObject(
        {
          provider: z.string({ error: MEMORY_PROVIDER_PROBLEM }).trim().min(1, MEMORY_PROVIDER_PROBLEM).optional(),
          embedding: z.string({ error: MEMORY_EMBEDDING_PROBLEM }).trim().min(1, MEMORY_EMBEDDING_PROBLEM).optional(),
        },
        { error: (issue) => (issue.code === 'unrecognized_keys' ? 'memory takes only "provider" and "embedding"' : 'memory must be an object such as {"provider": "semantic"}') },
      )
      .optional(),
  })
  // Other keys are packed verbatim and ignored by acx.
  .passthrough()
  .refine((a) => a.stepBudget === undefined || a.maxSteps === undefined || a.stepBudget === a.maxSteps, 'stepBudget and its alias maxSteps disagree; give one of them');

/** agent.json as acx applies it: defaults filled in, `maxSteps` folded into `stepBudget`. */
export interface AgentManifest {
  id: string;
  name: string;
  version: string;
  description?: string;
  publisher?: string;
  model?: string;
  speech?: 'final-text' | 'direct' | 'unspoken' | { tool: string };
  /** Most model steps per turn (alias `maxSteps`); also the default policy's `loop.maxTurns`. */
  stepBudget?: number;
  permissionMode?: PermissionMode;
  /** Built-in tools this agent uses, e.g. ["memory"]; absent: the default built-ins. */
  tools?: string[];
  license?: string;
  tags?: string[];
  authors?: Array<string | { name: string; url?: string }>;
  homepage?: string;
  /** Which memory backend the agent binds (docs/memory.md); ACX_MEMORY_PROVIDER overrides it. */
  memory?: { provider?: string; embedding?: string };
}

export interface ManifestDefaults {
  id: string;
  name?: string;
  version?: string;
  model?: string;
}

/** Checks agent.json (`where` names it in messages) and fills in what a run needs. */
export function parseAgentManifest(raw: unknown, where: string, defaults: ManifestDefaults): AgentManifest {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw definitionError(`${where}: must be a JSON object`, 'see docs/agent-layout.md for the fields');
  const checked = AGENT_JSON.safeParse(raw);
  if (!checked.success) {
    const first = checked.error.issues[0]!;
    throw definitionError(`${where}: ${first.message}`, 'see docs/agent-layout.md for the fields');
  }
  const { maxSteps, stepBudget, ...rest } = checked.data;
  const id = rest.id ?? defaults.id;
  if (!AGENT_ID.test(id)) {
    throw definitionError(`${where}: "id" must be a lowercase slug (got ${JSON.stringify(rest.id ?? id)})`, 'use letters, digits, ".", "_" and "-", e.g. "release-helper"');
  }
  const steps = stepBudget ?? maxSteps;
  const model = rest.model ?? defaults.model;
  return {
    ...(rest as Omit<AgentManifest, 'id' | 'name' | 'version'>),
    id,
    name: rest.name ?? defaults.name ?? id,
    version: rest.version ?? defaults.version ?? '0.0.0',
    ...(model ? { model } : {}),
    ...(steps !== undefined ? { stepBudget: steps } : {}),
  };
}

/** What a cartridge needs of agent.json beyond what a run needs (its meta carries these). */
export function packingProblems(raw: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (raw.id === undefined) problems.push('id must be a lowercase slug ([a-z0-9][a-z0-9._-]{0,63})');
  if (raw.name === undefined) problems.push('name must be 1-120 characters');
  if (raw.version === undefined) problems.push('version must be SemVer (e.g. 1.0.0)');
  if (raw.description === undefined) problems.push('description must be 1-500 characters');
  return problems;
}

/** agent.json's `speech` as the engine applies it: a speaking tool, unspoken, or the final text. */
export function speechModeOf(speech: unknown): SpeechMode {
  if (speech && typeof speech === 'object' && typeof (speech as { tool?: unknown }).tool === 'string') return { mode: 'tool', tool: (speech as { tool: string }).tool };
  if (speech === 'unspoken') return { mode: 'unspoken' };
  return { mode: 'final-text' };
}
