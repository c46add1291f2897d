import { BaseCradleClient } from '../../channel/client.ts';
import type { Logger } from '../../util/logger.ts';
import { assertDistinctHandles, envSlug, type ListedAgent, parseRouterAgentList, type RoutedAgent } from '../router/agents.ts';
import { loadRegistry } from '../router/registry.ts';
import { reachesWakes } from '../router/wake-env.ts';
import { CliExit } from './output.ts';

/**
 * The agents `acx router` hosts, from `--agents` and `--registry-file`, each with its token and
 * signing key from the router's environment:
 *
 * - the token from the entry's token variable (BASECRADLE_TOKEN_<HANDLE> for --agents); a
 *   variable that would reach every wake (wake-env.ts) is refused, so no wake holds another
 *   agent's token;
 * - the key from BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_<HANDLE>, else the shared
 *   ACX_ROUTER_WEBHOOK_SECRET; a polling router may have none (that agent's deliveries are then
 *   refused, and it lives on the poll alone);
 * - the uuid from the registry line; for --agents, from the platform (the token's dashboard),
 *   which also checks that the token is that handle's.
 */
export async function resolveRoutedAgents(
  flags: { agents?: string | undefined; registryFile?: string | undefined },
  context: { env: NodeJS.ProcessEnv; platformUrl: string; passEnv: readonly string[]; polling: boolean; logger: Logger },
): Promise<RoutedAgent[]> {
  const { env } = context;
  let listed: Array<ListedAgent & { uuid?: string; tokenVariable: string }>;
  try {
    const fromFlag = flags.agents !== undefined ? parseRouterAgentList(flags.agents).map((agent) => ({ ...agent, tokenVariable: `BASECRADLE_TOKEN_${envSlug(agent.name)}` })) : [];
    const fromFile = flags.registryFile !== undefined ? loadRegistry(flags.registryFile) : [];
    listed = [...fromFlag, ...fromFile];
    assertDistinctHandles(listed, '--agents and --registry-file together');
  } catch (error) {
    throw new CliExit('usage', `acx router: ${(error as Error).message}`);
  }
  if (listed.length === 0) throw new CliExit('usage', 'acx router: name the agents to host with --agents handle=DIR,… or --registry-file FILE.');

  const agents: RoutedAgent[] = [];
  for (const entry of listed) {
    const { name, tokenVariable } = entry;
    if (reachesWakes(tokenVariable, context.passEnv)) {
      throw new CliExit('usage', `acx router: @${name}'s token variable ${tokenVariable} would reach every wake (a variable wakes get, or listed in --pass-env); keep the token in one only the router reads, e.g. BASECRADLE_TOKEN_${envSlug(name)}.`);
    }
    const token = env[tokenVariable];
    if (!token) throw new CliExit('usage', `acx router: set ${tokenVariable} to @${name}'s platform token (acx platform user add prints one).`);
    const secret = env[`BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_${envSlug(name)}`] ?? env.ACX_ROUTER_WEBHOOK_SECRET;
    if (!secret) {
      const variables = `ACX_ROUTER_WEBHOOK_SECRET or BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_${envSlug(name)}`;
      if (!context.polling) throw new CliExit('usage', `acx router: set ${variables} to the secret the platform signs @${name}'s deliveries with, or give --poll to read the platform instead.`);
      context.logger.warn('router no signing key', { agent: name, reason: `its deliveries are refused (401) and the poll alone wakes it; set ${variables} to take them too` });
    }
    const uuid = entry.uuid ?? (await identityOf(name, tokenVariable, token, context.platformUrl));
    agents.push({ name, dir: entry.dir, command: entry.command, token, uuid, secret });
  }
  const owners = new Map<string, string>();
  for (const agent of agents) {
    const owner = owners.get(agent.uuid);
    if (owner) throw new CliExit('usage', `acx router: @${agent.name} and @${owner} are the same platform user (${agent.uuid}); each agent needs its own.`);
    owners.set(agent.uuid, agent.name);
  }
  return agents;
}

/** Who the token speaks as (the deliveries' recipient_uuid), checked against the handle it was given for. */
async function identityOf(name: string, variable: string, token: string, platformUrl: string): Promise<string> {
  const me = (await new BaseCradleClient({ baseUrl: platformUrl, token }).dashboard.get()).identity;
  if (me.handle.toLowerCase() !== name.toLowerCase()) throw new CliExit('usage', `acx router: ${variable} is @${me.handle}'s token, not @${name}'s.`);
  return me.uuid;
}
