import { join } from 'node:path';
import type { Command } from 'commander';
import { BaseCradleClient } from '../../../channel/client.ts';
import { resolveStateHome } from '../../../app/paths.ts';
import { envSlug, parseAgentList } from '../../router/agents.ts';
import { startRouter } from '../../router/router.ts';
import { storeKindOf } from '../../../store/store-url.ts';
import { CliExit } from '../output.ts';
import { untilStopped } from '../until-stopped.ts';
import { commandLogger } from '../command-logger.ts';
import { passEnvOption, replayWindowOption, resolveRouterFlags, type RouterFlags } from '../router-options.ts';

/**
 * `acx router --agents nova=DIR [--platform URL] [--port N] [--queue postgres://…]`: receives a
 * BaseCradle platform's signed webhooks and runs `acx wake --timeline` for the agent each is
 * addressed to, or with --queue enqueues it for `acx worker`. Each agent's
 * token comes from BASECRADLE_TOKEN_<HANDLE>, its signing secret from
 * BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_<HANDLE> or the shared ACX_ROUTER_WEBHOOK_SECRET.
 */
export function register(program: Command): void {
  program
    .command('router')
    .description("wake agents for a BaseCradle platform's signed webhook deliveries (one acx wake --timeline per event, serialized per agent)")
    .requiredOption('--agents <list>', 'handle=DIR pairs, comma-separated: which agent answers as which platform user')
    .option('--platform <url>', 'the platform (env BASECRADLE_BASE_URL, default http://127.0.0.1:4700)')
    .option('--port <n>', 'port to receive deliveries on (env ACX_ROUTER_PORT; 0 picks a free one)', process.env.ACX_ROUTER_PORT ?? '4710')
    .option('--home <dir>', "the router's state: router.db, the deliveries and their outcomes (default <state home>/router)")
    .option('--queue <url>', 'enqueue each delivery on the pg-boss queue in this PostgreSQL database for `acx worker` instead of running wakes here (env ACX_ROUTER_QUEUE)')
    .addOption(passEnvOption())
    .addOption(replayWindowOption())
    .action(async (options: RouterFlags & { agents: string; platform?: string; port: string; home?: string; queue?: string }) => {
      const env = process.env;
      const logger = commandLogger('service', env);
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliExit('usage', `acx router: --port must be an integer from 0 to 65535, not "${options.port}".`);
      const { passEnv, replayWindow } = resolveRouterFlags('acx router', options, env);
      let listed: Array<{ name: string; dir: string }>;
      try {
        listed = parseAgentList(options.agents);
      } catch (error) {
        throw new CliExit('usage', `acx router: ${(error as Error).message}`);
      }
      const platformUrl = options.platform ?? env.BASECRADLE_BASE_URL ?? 'http://127.0.0.1:4700';
      const agents = [];
      for (const { name, dir } of listed) {
        const token = env[`BASECRADLE_TOKEN_${envSlug(name)}`];
        const secret = env[`BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_${envSlug(name)}`] ?? env.ACX_ROUTER_WEBHOOK_SECRET;
        if (!token) throw new CliExit('usage', `acx router: set BASECRADLE_TOKEN_${envSlug(name)} to @${name}'s platform token (acx platform user add prints one).`);
        if (!secret) {
          throw new CliExit('usage', `acx router: set ACX_ROUTER_WEBHOOK_SECRET (or BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_${envSlug(name)}) to the secret the platform signs deliveries with.`);
        }
        // Who the token speaks as: the deliveries' recipient_uuid.
        const me = (await new BaseCradleClient({ baseUrl: platformUrl, token }).dashboard.get()).identity;
        if (me.handle.toLowerCase() !== name.toLowerCase()) throw new CliExit('usage', `acx router: BASECRADLE_TOKEN_${envSlug(name)} is @${me.handle}'s token, not @${name}'s.`);
        agents.push({ name, dir, token, secret, uuid: me.uuid });
      }
      const queueUrl = options.queue ?? env.ACX_ROUTER_QUEUE;
      if (queueUrl !== undefined && storeKindOf(queueUrl) !== 'postgres') throw new CliExit('usage', 'acx router: --queue takes a postgres:// URL (the database acx worker reads).');
      // pg-boss is loaded only by a router that enqueues.
      const queue = queueUrl ? await (await import('../../worker/queue.ts')).openWakeQueue(queueUrl, logger) : undefined;
      const home = options.home ?? join(resolveStateHome(undefined), 'router');
      // A delivery for a recipient not hosted here, signed with the shared secret, is answered 200 (not 401).
      const sharedSecrets = env.ACX_ROUTER_WEBHOOK_SECRET ? [env.ACX_ROUTER_WEBHOOK_SECRET] : [];
      const router = await startRouter({ agents, platformUrl, databasePath: join(home, 'router.db'), logger, port, passEnv, replayWindow, sharedSecrets, ...(queue ? { queue } : {}) });
      await untilStopped(
        () => process.stdout.write(`${router.url}\n`),
        () => router.close().then(() => queue?.close()),
      );
    });
}
