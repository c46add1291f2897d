import { resolve } from 'node:path';

/** An agent the router hosts: who it answers as on the platform and the key its deliveries are signed with. */
export interface RoutedAgent {
  /** The agent's platform handle (its name in --agents). */
  name: string;
  /** Agent directory or cartridge, as `acx wake` takes it. */
  dir: string;
  /** The platform user it speaks as: its token, and its uuid (the deliveries' recipient_uuid). */
  token: string;
  uuid: string;
  /** The key its deliveries are signed with. */
  secret: string;
}

/** `--agents nova=DIR,ada=DIR`: each agent's platform handle and its directory (or cartridge). */
export function parseAgentList(value: string): Array<{ name: string; dir: string }> {
  const agents = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf('=');
      const name = at > 0 ? entry.slice(0, at).trim() : '';
      const dir = at > 0 ? entry.slice(at + 1).trim() : '';
      if (!/^[A-Za-z0-9_-]+$/.test(name) || !dir) {
        throw new TypeError(`--agents takes handle=DIR pairs separated by commas (e.g. nova=examples/nova), not "${entry}".`);
      }
      return { name, dir: resolve(dir) };
    });
  if (agents.length === 0) throw new TypeError('--agents needs at least one handle=DIR pair.');
  const seen = new Set<string>();
  for (const agent of agents) {
    if (seen.has(agent.name.toLowerCase())) throw new TypeError(`--agents names @${agent.name} twice.`);
    seen.add(agent.name.toLowerCase());
  }
  return agents;
}

/** The environment-variable suffix for a handle: NOVA for nova, MY_BOT for my-bot. */
export const envSlug = (handle: string): string => handle.toUpperCase().replace(/[^A-Z0-9]/g, '_');
