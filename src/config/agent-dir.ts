import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../core/errors.ts';
import { isSpeechSetting } from '../cartridge/layout.ts';

/**
 * An acx agent directory: the one directory that `acx run DIR` runs and `acx build DIR` packs.
 *
 *   agent.json                 identity and defaults (id, name, version, model, speech, ...)
 *   prompts/system-prompt.md   who the agent is (identity, style)
 *   prompts/initialize.md      how it operates (standing instructions)
 *   skills/<name>/SKILL.md     skills with agentskills.io frontmatter (name, description)
 *   memory/*.json              seed memory records
 *   mcp/*.json                 MCP drop-ins
 *   harness-requirements.json  optional host contract (cartridge spec §8)
 *   loop-context-policy.json   optional loop & context policy (cartridge spec §9)
 *   cassettes/*.json           recorded model runs for offline replay (not packed)
 */
export interface AgentManifest {
  id: string;
  name: string;
  version: string;
  description?: string;
  publisher?: string;
  model?: string;
  speech?: 'final-text' | 'direct' | 'unspoken' | { tool: string };
  maxSteps?: number;
  permissionMode?: 'allow-reads' | 'allow-edits' | 'allow-all';
  /** Built-in tools this agent uses, e.g. ["memory"]. */
  tools?: string[];
}

export interface Skill {
  name: string;
  description: string;
  body: string;
  path: string;
}

export interface AgentDirectory {
  dir: string;
  manifest: AgentManifest;
  systemPrompt: string;
  initialize: string;
  skills: Skill[];
  mcpDir: string | undefined;
  memoryDir: string | undefined;
}

const ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

// Paths inside acx itself (a checkout, or the installed package, which ships docs/ and examples/):
// this module is src/config/ or dist/config/, two levels below either root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const EXAMPLE_AGENT = join(PACKAGE_ROOT, 'examples', 'notes-keeper');
const LAYOUT_DOC = join(PACKAGE_ROOT, 'docs', 'agent-layout.md');

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`, { hint: 'Fix the file and run again.' });
  }
}

/** HTML comments are operator notes; they never reach the model. */
export function stripHtmlComments(text: string): string {
  return text.replace(/<!--[\s\S]*?-->/g, '').replace(/\n{3,}/g, '\n\n').trim();
}

function readOptional(path: string): string {
  return existsSync(path) ? stripHtmlComments(readFileSync(path, 'utf8')) : '';
}

export function parseSkill(path: string): Skill {
  const text = readFileSync(path, 'utf8');
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) {
    throw new ConfigError(`${path} has no frontmatter.`, {
      hint: 'Start SKILL.md with ---, name: and description: lines, then --- (agentskills.io format).',
    });
  }
  const front = (parseYaml(match[1]!) ?? {}) as { name?: unknown; description?: unknown };
  if (typeof front.name !== 'string' || typeof front.description !== 'string') {
    throw new ConfigError(`${path}: the frontmatter needs string "name" and "description".`, {
      hint: 'Example:\n---\nname: release-notes\ndescription: Write release notes from a list of merged changes.\n---',
    });
  }
  return { name: front.name, description: front.description, body: match[2]!.trim(), path };
}

export function isAgentDirectory(path: string): boolean {
  return existsSync(join(path, 'agent.json')) && statSync(path).isDirectory();
}

export function loadAgentDirectory(path: string): AgentDirectory {
  const dir = resolve(path);
  if (!existsSync(join(dir, 'agent.json'))) {
    throw new ConfigError(`${dir} is not an acx agent directory (no agent.json).`, {
      hint: `Create one with \`acx init ${path}\`, or run the example agent at ${EXAMPLE_AGENT} (the layout: ${LAYOUT_DOC}).`,
    });
  }
  const raw = readJson(join(dir, 'agent.json')) as Partial<AgentManifest>;
  const id = raw.id ?? basename(dir);
  if (typeof id !== 'string' || !ID.test(id)) {
    throw new ConfigError(`${join(dir, 'agent.json')}: "id" must be a lowercase slug (got ${JSON.stringify(raw.id)}).`, {
      hint: 'Use letters, digits, ".", "_" and "-", e.g. "release-helper".',
    });
  }
  if (!isSpeechSetting(raw.speech)) {
    throw new ConfigError(`${join(dir, 'agent.json')}: "speech" must be "final-text", "direct", "unspoken" or {"tool": "<name>"} (got ${JSON.stringify(raw.speech)}).`, {
      hint: 'Leave it out for the default: the final text is the reply.',
    });
  }
  if (raw.maxSteps !== undefined && (!Number.isInteger(raw.maxSteps) || raw.maxSteps <= 0)) {
    throw new ConfigError(`${join(dir, 'agent.json')}: "maxSteps" must be a positive whole number.`);
  }
  const manifest: AgentManifest = {
    id,
    name: raw.name ?? id,
    version: raw.version ?? '0.0.0',
    ...raw,
  } as AgentManifest;
  const skillsDir = join(dir, 'skills');
  const skills = existsSync(skillsDir)
    ? readdirSync(skillsDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && existsSync(join(skillsDir, entry.name, 'SKILL.md')))
        .map((entry) => parseSkill(join(skillsDir, entry.name, 'SKILL.md')))
        .sort((a, b) => a.name.localeCompare(b.name))
    : [];
  return {
    dir,
    manifest,
    systemPrompt: readOptional(join(dir, 'prompts', 'system-prompt.md')),
    initialize: readOptional(join(dir, 'prompts', 'initialize.md')),
    skills,
    mcpDir: existsSync(join(dir, 'mcp')) ? join(dir, 'mcp') : undefined,
    memoryDir: existsSync(join(dir, 'memory')) ? join(dir, 'memory') : undefined,
  };
}
