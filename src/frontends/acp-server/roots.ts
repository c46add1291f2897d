import fs from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';

/**
 * A session's workspace roots as the client sends them: `cwd` (the project the editor has open,
 * where relative paths and commands start) and `additionalDirectories` (further roots). Each must
 * be an absolute path to an existing directory; anything else is a JSON-RPC invalid params
 * error that says which value was wrong.
 */
export interface SessionRoots {
  cwd: string;
  additionalDirectories: string[];
}

function checkDirectory(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw acp.RequestError.invalidParams({ [name]: value ?? null }, `${name} is required: the absolute path of the project directory`);
  }
  if (!path.isAbsolute(value)) {
    throw acp.RequestError.invalidParams({ [name]: value }, `${name} must be an absolute path (got "${value}")`);
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(value);
  } catch {
    throw acp.RequestError.invalidParams({ [name]: value }, `${name} "${value}" does not exist; open an existing directory`);
  }
  if (!stat.isDirectory()) throw acp.RequestError.invalidParams({ [name]: value }, `${name} "${value}" is not a directory`);
  return path.resolve(value); // normalized, without a trailing slash, so a kept cwd compares equal
}

export function sessionRoots(params: { cwd?: unknown; additionalDirectories?: unknown }): SessionRoots {
  const cwd = checkDirectory('cwd', params.cwd);
  const extra = params.additionalDirectories ?? [];
  if (!Array.isArray(extra)) {
    throw acp.RequestError.invalidParams({ additionalDirectories: extra }, 'additionalDirectories must be an array of absolute paths');
  }
  const additionalDirectories = extra.map((dir) => checkDirectory('additionalDirectories', dir)).filter((dir) => dir !== cwd);
  return { cwd, additionalDirectories: [...new Set(additionalDirectories)] };
}
