import { resolve } from 'node:path';

/** An agent the router hosts: who it answers as on the platform, how it is woken and the key its deliveries are signed with. */
export interface RoutedAgent {
  /** The agent's platform handle (its name in --agents or the registry). */
  name: string;
  /** An acx agent: its directory or cartridge, woken as `acx wake <dir>`. */
  dir?: string | undefined;
  /**
   * Any other harness: its wake command as argv (the program, then its arguments), run as it
   * stands with `--timeline <uuid> [--message|--asset|--event <uuid>]` appended; never through a
   * shell. A first word `acx` means this acx. Set instead of `dir`.
   */
  command?: readonly string[] | undefined;
  /** The platform user it speaks as: its token, and its uuid (the deliveries' recipient_uuid). */
  token: string;
  uuid: string;
  /** The key its deliveries are signed with; undefined: none (a polling router), so every delivery for it is refused 401. */
  secret: string | undefined;
}

/** An agent as --agents or the registry names it, before its token and key are found. */
export interface ListedAgent {
  name: string;
  dir?: string;
  command?: string[];
}

const HANDLE = /^[A-Za-z0-9_-]+$/;
/** In --agents, `handle=exec:PROGRAM [ARG…]` names a wake command instead of an acx agent directory. */
const EXEC_PREFIX = 'exec:';

/** `--agents nova=DIR,ada=DIR` (worker, platform serve): each agent's platform handle and its acx directory (or cartridge). */
export function parseAgentList(value: string): Array<{ name: string; dir: string }> {
  return parseEntries(value, false) as Array<{ name: string; dir: string }>;
}

/**
 * `acx router --agents nova=DIR,jt=exec:/usr/local/bin/basecradle-harness-wake`: as parseAgentList,
 * and an entry may name, after `exec:`, its wake command instead, split on spaces (a word with a
 * space or a comma in it needs the registry file).
 */
export function parseRouterAgentList(value: string): ListedAgent[] {
  return parseEntries(value, true);
}

function parseEntries(value: string, commands: boolean): ListedAgent[] {
  const agents = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry): ListedAgent => {
      const at = entry.indexOf('=');
      const name = at > 0 ? entry.slice(0, at).trim() : '';
      const target = at > 0 ? entry.slice(at + 1).trim() : '';
      if (!HANDLE.test(name) || !target) {
        throw new TypeError(`--agents takes handle=DIR pairs separated by commas (e.g. nova=examples/nova), not "${entry}".`);
      }
      if (!target.startsWith(EXEC_PREFIX)) return { name, dir: resolve(target) };
      if (!commands) throw new TypeError(`--agents here takes acx agent directories only; "${entry}" names a wake command (acx router takes those).`);
      const command = target.slice(EXEC_PREFIX.length).trim().split(/\s+/).filter(Boolean);
      if (command.length === 0) throw new TypeError(`--agents: "${entry}" names no program after exec:.`);
      return { name, command };
    });
  if (agents.length === 0) throw new TypeError('--agents needs at least one handle=DIR pair.');
  assertDistinctHandles(agents, '--agents');
  return agents;
}

/** Two entries for one handle would route one agent's deliveries to whichever came last. */
export function assertDistinctHandles(agents: ReadonlyArray<{ name: string }>, where: string): void {
  const seen = new Set<string>();
  for (const agent of agents) {
    if (seen.has(agent.name.toLowerCase())) throw new TypeError(`${where} names @${agent.name} twice.`);
    seen.add(agent.name.toLowerCase());
  }
}

export const isHandle = (value: string): boolean => HANDLE.test(value);

/** The environment-variable suffix for a handle: NOVA for nova, MY_BOT for my-bot. */
export const envSlug = (handle: string): string => handle.toUpperCase().replace(/[^A-Z0-9]/g, '_');
