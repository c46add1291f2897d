import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createSystemPromptTools, SYSTEM_PROMPT_FILE, type SystemPromptToolOptions } from '../tools/builtin/system-prompt.ts';
import type { PolicyTool } from '../tools/policy.ts';
import type { Logger } from '../util/logger.ts';
import { stripHtmlComments } from '../agent-def/definition.ts';
import { isInstalled, packagedDefaults, type DefaultsMap } from './install.ts';

/**
 * The charter: the standing instructions an agent running from the config home starts every
 * turn with, composed from `prompts/system-prompt.md` (who it is) then `prompts/initialize.md`
 * (how it operates, including the input-security floor), HTML comments stripped. A home that was
 * never installed runs on the packaged defaults; a prompt the operator deleted from an installed
 * home stays deleted (and is reported in `missing`). A fallback system prompt (ACX_SYSTEM_PROMPT)
 * stands in for the packaged one only while the home was never installed: once the operator has
 * files to edit, the files are the charter.
 */
export const INITIALIZE_FILE = 'prompts/initialize.md';
export { SYSTEM_PROMPT_FILE };

export type PromptSource = 'file' | 'packaged' | 'setting' | 'deleted';

export interface PromptPart {
  /** The raw text (comments included); empty when deleted. */
  content: string;
  source: PromptSource;
  /** The file in the config home this part is (or would be) read from. */
  path: string;
}

export interface Charter {
  /** The composed standing instructions. */
  text: string;
  systemPrompt: string;
  initialize: string;
  /** True when a part came from the packaged defaults because the home was never installed. */
  fallback: boolean;
  /** Shipped prompt files the operator deleted from an installed home. */
  missing: string[];
  sources: { systemPrompt: PromptSource; initialize: PromptSource };
}

export interface CharterOptions {
  defaults?: DefaultsMap;
  logger?: Logger;
  /** The system prompt to use instead of the packaged default in a home that was never installed. */
  fallbackSystemPrompt?: string | null;
}

/** One prompt file as the charter sees it: the file, else the packaged default (never installed), else deleted. */
export function readPromptFile(configHome: string, file: string, defaults: DefaultsMap = packagedDefaults()): PromptPart {
  const home = resolve(configHome);
  const path = join(home, ...file.split('/'));
  if (existsSync(path)) return { content: readFileSync(path, 'utf8'), source: 'file', path };
  if (!isInstalled(home)) return { content: defaults[file] ?? '', source: 'packaged', path };
  return { content: '', source: 'deleted', path };
}

export function composeCharter(configHome: string, options: CharterOptions = {}): Charter {
  const defaults = options.defaults ?? packagedDefaults();
  const packaged = readPromptFile(configHome, SYSTEM_PROMPT_FILE, defaults);
  const system: PromptPart = packaged.source === 'packaged' && options.fallbackSystemPrompt ? { ...packaged, content: options.fallbackSystemPrompt, source: 'setting' } : packaged;
  const init = readPromptFile(configHome, INITIALIZE_FILE, defaults);
  const missing = [
    ...(system.source === 'deleted' ? [SYSTEM_PROMPT_FILE] : []),
    ...(init.source === 'deleted' ? [INITIALIZE_FILE] : []),
  ];
  for (const file of missing) {
    // Deleting initialize.md also removes the input-security floor; say so every time.
    options.logger?.warn('charter_part_missing', { file, config_home: resolve(configHome) });
  }
  const systemPrompt = stripHtmlComments(system.content);
  const initialize = stripHtmlComments(init.content);
  return {
    text: [systemPrompt, initialize].filter((part) => part.length > 0).join('\n\n'),
    systemPrompt,
    initialize,
    fallback: system.source === 'packaged' || init.source === 'packaged',
    missing,
    sources: { systemPrompt: system.source, initialize: init.source },
  };
}

/**
 * The self-authorship tools bound to this config home's own system prompt, reading through to the
 * packaged default while the home was never installed (the same text the charter uses).
 * They are opt-in: Policy loads them only with the `system_prompt` grant.
 */
export function createSelfAuthorshipTools(
  configHome: string,
  options: Omit<SystemPromptToolOptions, 'configHome' | 'fallback'> & { defaults?: DefaultsMap } = {},
): PolicyTool[] {
  const { defaults, ...rest } = options;
  return createSystemPromptTools({
    ...rest,
    configHome,
    fallback: () => readPromptFile(configHome, SYSTEM_PROMPT_FILE, defaults).content,
  });
}
