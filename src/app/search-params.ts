import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../core/errors.ts';

/**
 * `search_params.json` in the config home: OpenRouter's web-search parameters (engine,
 * max_results, allowed_domains, user_location, ...), passed verbatim as the
 * `openrouter:web_search` server tool's `parameters`, so a parameter OpenRouter adds later works
 * unchanged. The operator's file: the installer never writes or prunes it.
 */
export const SEARCH_PARAMS_FILE = 'search_params.json';

export interface SearchParams {
  /** The file's object, untouched; undefined when there is no file. */
  value: Record<string, unknown> | undefined;
  path: string | null;
}

/** Reads the file; a file that is not one JSON object is an error saying so (no search runs untuned). */
export function readSearchParams(configHome: string): SearchParams {
  const path = join(configHome, SEARCH_PARAMS_FILE);
  if (!existsSync(path)) return { value: undefined, path: null };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}.`, {
      hint: 'Fix the file (one JSON object of OpenRouter web-search parameters, e.g. {"max_results": 5}) or delete it for the defaults.',
    });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`${path} must hold one JSON object of web-search parameters.`, {
      hint: 'Write e.g. {"engine": "exa", "max_results": 10}, or delete the file for the defaults.',
    });
  }
  return { value: parsed as Record<string, unknown>, path };
}
