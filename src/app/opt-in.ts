import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';

/**
 * Powerful tools are opt-in: they ship with acx but stay off until an operator grants them by
 * name, whatever the provider or profile. A grant is a file in the config home's `tools/`
 * overlay, `tools/<name>.enabled` (its content is ignored), so `acx install --opt-in NAME` and
 * `touch tools/NAME.enabled` do the same thing, and deleting the file revokes the grant.
 *
 * The grant names are stable words, not always tool names: one grant can cover several tools
 * (`system_prompt` covers `system_prompt_read` and `system_prompt_edit`). `readOptIns` expands
 * them into the names `Policy` checks (`new Policy(profile, { grants })`).
 */
export interface OptInDefinition {
  name: string;
  /** The names Policy sees once this is granted: tool names, or a capability a tool checks. */
  grants: readonly string[];
  /** What the grant gives the model, in one line, for the install summary and errors. */
  summary: string;
}

export const OPT_IN_TOOLS = {
  shell: {
    name: 'shell',
    grants: ['shell'],
    summary:
      'an unsandboxed shell on the host as the agent\'s OS user; also needs the unlocked profile (ACX_PROFILE=unlocked) and never runs as root',
  },
  'execute-unisolated': {
    name: 'execute-unisolated',
    grants: ['execute-unisolated'],
    summary: 'lets the execute tool run commands without OS isolation (bwrap/unshare) when none is available',
  },
  system_prompt: {
    name: 'system_prompt',
    grants: ['system_prompt', 'system_prompt_read', 'system_prompt_edit'],
    summary: 'self-authorship: the agent may read and rewrite its own prompts/system-prompt.md (never initialize.md)',
  },
  web_search: {
    name: 'web_search',
    grants: ['web_search'],
    summary:
      "server-side web search run by the provider (OpenAI Responses, xAI, OpenRouter's openrouter:web_search with the config home's search_params.json); the reply ends with a Sources: footer",
  },
  x_search: {
    name: 'x_search',
    grants: ['x_search'],
    summary: "xAI's server-side search of posts on X (xAI only)",
  },
  code_execution: {
    name: 'code_execution',
    grants: ['code_execution', 'code_attach'],
    summary:
      "code run in the provider's own sandbox (OpenAI's code interpreter, xAI's code execution), never on this host; on OpenAI the files a run makes are saved to the workspace and code_attach feeds a workspace file in",
  },
  // The media tools: each generation is billed by the provider. The provider decides only
  // whether a granted one is available (OpenAI's on openai, the grok ones on xai).
  generate_image: {
    name: 'generate_image',
    grants: ['generate_image'],
    summary: "draw images with OpenAI's image model, saved in the workspace (billed per image; openai provider)",
  },
  edit_image: {
    name: 'edit_image',
    grants: ['edit_image'],
    summary: "edit workspace images (with an optional mask) with OpenAI's image model (billed per image; openai provider)",
  },
  hear_audio: {
    name: 'hear_audio',
    grants: ['listen'],
    summary: "the listen tool: transcribe workspace audio with OpenAI's transcription model (billed; openai provider)",
  },
  grok_generate_image: {
    name: 'grok_generate_image',
    grants: ['grok_generate_image'],
    summary: "draw images with xAI's image model, saved in the workspace (billed per image; xai provider)",
  },
  grok_edit_image: {
    name: 'grok_edit_image',
    grants: ['grok_edit_image'],
    summary: "edit or combine up to 3 workspace images by prompt with xAI's image model (billed; xai provider)",
  },
  grok_generate_video: {
    name: 'grok_generate_video',
    grants: ['grok_generate_video'],
    summary: "make video clips with xAI's video model, saved in the workspace (billed per clip; xai provider)",
  },
  xai_account_balance: {
    name: 'xai_account_balance',
    grants: ['xai_account_balance'],
    summary: "read the prepaid credit left on the agent's own xAI account (XAI_MANAGEMENT_KEY, a read-only Management Key; optional XAI_TEAM_ID; xai provider)",
  },
} as const satisfies Record<string, OptInDefinition>;

export type OptInName = keyof typeof OPT_IN_TOOLS;

/**
 * Tools people might expect to need a grant that are on by default, with the reason.
 * web_fetch stays on: it only reads (GET, https, public hosts only, SSRF-guarded against private
 * and link-local addresses, size-capped), so it is benign like the platform tools; seed 004
 * lists it with the benign defaults. What it returns is untrusted data, and initialize.md's
 * input-security floor says so.
 */
export const DEFAULT_ON_TOOLS: Record<string, string> = {
  web_fetch:
    'web_fetch is on by default: it only reads public https pages (private and link-local addresses are refused), so it needs no grant',
};

export const GRANT_SUFFIX = '.enabled';

export function isOptInName(name: string): name is OptInName {
  return Object.hasOwn(OPT_IN_TOOLS, name);
}

export function knownOptInsText(): string {
  return Object.values(OPT_IN_TOOLS)
    .map((definition) => `  ${definition.name}: ${definition.summary}`)
    .join('\n');
}

/**
 * Splits `--opt-in a,b --opt-in c` values into checked names (deduplicated, in order). Throws a
 * ConfigError naming every unknown name and listing the known ones; nothing is granted then.
 */
export function parseOptInNames(values: Iterable<string>): OptInName[] {
  const names: OptInName[] = [];
  const unknown: string[] = [];
  const defaultOn: string[] = [];
  for (const value of values) {
    for (const raw of value.split(',')) {
      const name = raw.trim();
      if (!name) continue;
      if (isOptInName(name)) {
        if (!names.includes(name)) names.push(name);
      } else if (Object.hasOwn(DEFAULT_ON_TOOLS, name)) {
        defaultOn.push(name);
      } else {
        unknown.push(name);
      }
    }
  }
  if (unknown.length > 0 || defaultOn.length > 0) {
    const parts: string[] = [];
    if (unknown.length > 0) parts.push(`Unknown opt-in tool${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`);
    for (const name of defaultOn) parts.push(`Nothing to grant: ${DEFAULT_ON_TOOLS[name]}.`);
    throw new ConfigError(parts.join(' '), {
      hint: `Leave ${[...unknown, ...defaultOn].join(', ')} out of --opt-in; the tools that need a grant are ${Object.keys(OPT_IN_TOOLS).join(', ')} (\`acx install --help\` says what each does).`,
    });
  }
  return names;
}

export function grantFileName(name: OptInName): string {
  return `${name}${GRANT_SUFFIX}`;
}

export interface GrantListing {
  /** Known grants present as `tools/<name>.enabled`, sorted. */
  granted: OptInName[];
  /** `*.enabled` files whose name is not a known opt-in tool (ignored). */
  unknown: string[];
}

/** The grant files in `<configHome>/tools/`. A missing directory means no grants. */
export function listOptIns(configHome: string): GrantListing {
  const dir = join(configHome, 'tools');
  if (!existsSync(dir)) return { granted: [], unknown: [] };
  const granted: OptInName[] = [];
  const unknown: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (!entry.endsWith(GRANT_SUFFIX)) continue;
    // A directory named like a grant is not a grant: only a file (or a link to one) counts.
    let isFile = false;
    try {
      isFile = statSync(join(dir, entry)).isFile();
    } catch {
      isFile = false;
    }
    if (!isFile) continue;
    const name = entry.slice(0, -GRANT_SUFFIX.length);
    if (isOptInName(name)) granted.push(name);
    else unknown.push(entry);
  }
  return { granted: granted.sort(), unknown: unknown.sort() };
}

/**
 * The grants for `Policy`: every name a granted opt-in covers, sorted. Unknown `*.enabled`
 * files grant nothing and are logged once, so a typo is visible instead of silently inert.
 */
export function readOptIns(configHome: string, options: { logger?: Logger } = {}): string[] {
  const logger = options.logger ?? silentLogger;
  const listing = listOptIns(configHome);
  for (const file of listing.unknown) {
    logger.warn('opt_in_unknown', { file: join('tools', file), known: Object.keys(OPT_IN_TOOLS).join(',') });
  }
  const grants = new Set<string>();
  for (const name of listing.granted) for (const grant of OPT_IN_TOOLS[name].grants) grants.add(grant);
  return [...grants].sort();
}
