import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { assertDistinctHandles, envSlug, isHandle, type ListedAgent } from './agents.ts';

/**
 * `acx router --registry-file FILE`: the agents a router hosts, one line each, so a fleet of mixed
 * harnesses lives behind one router without a platform lookup at start:
 *
 * ```text
 * # handle  recipient uuid                         token variable  wake command
 * nova      0190a5f2-0000-7000-8000-00000000000a  -               acx wake /srv/agents/nova
 * jt        0190a5f2-0000-7000-8000-00000000000b  JT_TOKEN        /home/jt/.local/bin/basecradle-harness-wake
 * ```
 *
 * - Fields are separated by spaces or tabs; a word holding spaces is wrapped in double quotes
 *   (there are no escapes, and nothing else is special: no variables, no globs, no shell).
 * - A blank line, or one whose first non-blank character is `#`, is skipped.
 * - The token variable names the variable in the router's environment that holds the agent's
 *   platform token; `-` means BASECRADLE_TOKEN_<HANDLE>. The wake gets it as BASECRADLE_TOKEN.
 * - The wake command is argv, the rest of the line: the router appends `--timeline <uuid>
 *   [--message|--asset|--event <uuid>]` and runs it directly. `acx wake DIR` is an acx agent
 *   (DIR relative to this file's folder); a first word `acx` means the acx running the router.
 */
export interface RegistryAgent extends ListedAgent {
  uuid: string;
  /** Where in the router's environment its token is. */
  tokenVariable: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function loadRegistry(path: string): RegistryAgent[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TypeError(`cannot read the registry file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  return parseRegistry(text, path);
}

export function parseRegistry(text: string, path: string): RegistryAgent[] {
  const agents: RegistryAgent[] = [];
  const uuids = new Map<string, string>();
  text.split(/\r?\n/).forEach((line, index) => {
    const where = `${path} line ${index + 1}`;
    if (line.trim() === '' || line.trim().startsWith('#')) return;
    const words = splitWords(line, where);
    const [name, uuid, tokenVariable, ...command] = words as [string, string | undefined, string | undefined, ...string[]];
    if (command.length === 0) throw new TypeError(`${where}: expected "handle recipient-uuid token-variable wake command…", got ${words.length} field(s).`);
    if (!isHandle(name)) throw new TypeError(`${where}: "${name}" is not a platform handle (letters, digits, _ and -).`);
    if (!UUID.test(uuid!)) throw new TypeError(`${where}: "${uuid}" is not a recipient uuid (the agent's platform user uuid).`);
    if (tokenVariable !== '-' && !VARIABLE.test(tokenVariable!)) throw new TypeError(`${where}: "${tokenVariable}" is not a variable name (or - for BASECRADLE_TOKEN_${envSlug(name)}).`);
    const owner = uuids.get(uuid!.toLowerCase());
    if (owner) throw new TypeError(`${where}: @${name} has the recipient uuid of @${owner}; each agent is its own platform user.`);
    uuids.set(uuid!.toLowerCase(), name);
    const variable = tokenVariable === '-' ? `BASECRADLE_TOKEN_${envSlug(name)}` : tokenVariable!;
    const isAcxAgent = command.length === 3 && command[0] === 'acx' && command[1] === 'wake';
    agents.push({ name, uuid: uuid!.toLowerCase(), tokenVariable: variable, ...(isAcxAgent ? { dir: resolve(dirname(path), command[2]!) } : { command }) });
  });
  if (agents.length === 0) throw new TypeError(`${path} lists no agents (one line each: handle recipient-uuid token-variable wake command).`);
  assertDistinctHandles(agents, path);
  return agents;
}

/** Whitespace-separated words; "…" holds spaces (no escapes). */
function splitWords(line: string, where: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|(\S+)/g;
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) {
    const word = match[1] ?? match[2]!;
    if (match[2]?.includes('"')) throw new TypeError(`${where}: a quote may only wrap a whole word ("…"), and must be closed.`);
    words.push(word);
  }
  return words;
}
