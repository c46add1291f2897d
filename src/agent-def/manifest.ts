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
const MEMORY_PROVIDER_PROBLEM = 'memory.provider must be "sqlite", "semantic" or "module#export" (a module of your own)';
const MEMORY_EMBEDDING_PROBLEM = 'memory.embedding must be "local-hash-128" or "provider:model-id"';

/*
 * The schema, as plain checks: every wake and run reads agent.json, and a schema library costs a
 * repeated wake more start-up than all the rest of its work (zod is ~95 modules). Each check
 * returns the value as applied (trimmed where the field is trimmed) or the field's one message.
 */
type Checked = { value: unknown } | { problem: string };
type Check = (value: unknown) => Checked;

const ok = (value: unknown): Checked => ({ value });
const isText = (value: unknown): value is string => typeof value === 'string';
/** A string that passes `test` (after trimming, when `trim`), else `problem`. */
const text = (problem: string, test: (s: string) => boolean = () => true, trim = false): Check => (value) => {
  if (!isText(value)) return { problem };
  const applied = trim ? value.trim() : value;
  return test(applied) ? ok(applied) : { problem };
};
const steps = (field: string): Check => (value) =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 1000 ? ok(value) : { problem: `${field} must be an integer from 1 to 1000` };
/** An array whose every item passes `item`; the problem names the first item that does not. */
const list = (problem: string, item: Check): Check => (value) => {
  if (!Array.isArray(value)) return { problem };
  const items: unknown[] = [];
  for (const [index, entry] of value.entries()) {
    const checked = item(entry);
    if ('problem' in checked) return { problem: `${problem} (item ${index} is ${JSON.stringify(entry)})` };
    items.push(checked.value);
  }
  return ok(items);
};
const string: Check = text('not a string');
const author: Check = (value) => {
  if (isText(value)) return ok(value);
  const entry = value as { name?: unknown; url?: unknown } | null;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry) || !isText(entry.name) || (entry.url !== undefined && !isText(entry.url))) {
    return { problem: 'not a name or {name, url}' };
  }
  // Only name and url are kept.
  return ok(entry.url === undefined ? { name: entry.name } : { name: entry.name, url: entry.url });
};
const memory: Check = (value) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { problem: 'memory must be an object such as {"provider": "semantic"}' };
  const fields: Record<string, Check> = {
    provider: text(MEMORY_PROVIDER_PROBLEM, (s) => s !== '', true),
    embedding: text(MEMORY_EMBEDDING_PROBLEM, (s) => s !== '', true),
  };
  const applied = checkFields(value as Record<string, unknown>, fields);
  if ('problem' in applied) return applied;
  if (Object.keys(value).some((key) => !(key in fields))) return { problem: 'memory takes only "provider" and "embedding"' };
  return applied;
};

/** agent.json's fields, checked in this order (the first problem is the one reported). */
const AGENT_JSON: Record<string, Check> = {
  id: text('id must be a lowercase slug ([a-z0-9][a-z0-9._-]{0,63})', (s) => AGENT_ID.test(s)),
  name: text('name must be 1-120 characters', (s) => s.length >= 1 && s.length <= 120, true),
  version: text('version must be SemVer (e.g. 1.0.0)', (s) => SEMVER.test(s)),
  description: text('description must be 1-500 characters', (s) => s.trim() !== '' && s.length <= 500),
  publisher: text('publisher must be a reverse-DNS string'),
  model: text('model must look like "provider:model-id"', (s) => MODEL.test(s)),
  speech: (v) =>
    v === 'final-text' || v === 'direct' || v === 'unspoken' || (typeof v === 'object' && v !== null && isText((v as { tool?: unknown }).tool) && (v as { tool: string }).tool !== '')
      ? ok(v)
      : { problem: SPEECH_PROBLEM },
  stepBudget: steps('stepBudget'),
  maxSteps: steps('maxSteps'),
  permissionMode: (v) => (PERMISSION_MODES.includes(v as PermissionMode) ? ok(v) : { problem: `permissionMode must be one of ${PERMISSION_MODES.join(', ')}` }),
  tools: (v) => {
    const checked = list('tools must be an array of built-in tool names', string)(v);
    if ('problem' in checked) return checked;
    const unknown = (checked.value as string[]).filter((t) => !isBuiltinName(t));
    return unknown.length ? { problem: `tools names unknown built-in(s) ${unknown.join(', ')} (known: ${KNOWN_BUILTINS.join(', ')}; MCP servers go in mcp/*.json)` } : checked;
  },
  license: text('license must be a string'),
  tags: list('tags must be an array of strings', string),
  authors: list('authors must be a list of names or {name, url}', author),
  homepage: text('homepage must be a URL string'),
  memory,
};

/** Checks the fields present in `raw`; other keys are kept as they are. */
function checkFields(raw: Record<string, unknown>, fields: Record<string, Check>): Checked {
  const applied: Record<string, unknown> = { ...raw };
  for (const [key, check] of Object.entries(fields)) {
    if (raw[key] === undefined) continue;
    const checked = check(raw[key]);
    if ('problem' in checked) return checked;
    applied[key] = checked.value;
  }
  return ok(applied);
}

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
  const checked = checkFields(raw as Record<string, unknown>, AGENT_JSON);
  const problem = 'problem' in checked ? checked.problem : stepsProblem(raw as Record<string, unknown>);
  if (problem) throw definitionError(`${where}: ${problem}`, 'see docs/agent-layout.md for the fields');
  const { maxSteps, stepBudget, ...rest } = (checked as { value: Record<string, unknown> }).value as Omit<AgentManifest, 'stepBudget'> & { stepBudget?: number; maxSteps?: number };
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

function stepsProblem(raw: Record<string, unknown>): string | undefined {
  const { stepBudget, maxSteps } = raw;
  if (stepBudget !== undefined && maxSteps !== undefined && stepBudget !== maxSteps) return 'stepBudget and its alias maxSteps disagree; give one of them';
  return undefined;
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
