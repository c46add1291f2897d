import { join } from 'node:path';
import type { Command } from 'commander';
import { resolveStateHome } from '../../../app/paths.ts';
import { PROBE_SECRET_VARIABLE } from '../../router/probe.ts';
import { startRouter } from '../../router/router.ts';
import { storeKindOf } from '../../../store/store-url.ts';
import { parseDuration } from '../../../util/duration.ts';
import { CliExit } from '../output.ts';
import { untilStopped } from '../until-stopped.ts';
import { commandLogger } from '../command-logger.ts';
import { resolveRoutedAgents } from '../router-agents.ts';
import { noWarmOption, passEnvOption, replayWindowOption, resolveRouterFlags, type RouterFlags } from '../router-options.ts';

/**
 * `acx router --agents nova=DIR | --registry-file FILE [--platform URL] [--port N] [--poll 30s]
 * [--queue postgres://…]`: receives a BaseCradle platform's signed webhooks (and with --poll reads
 * the platform itself) and runs each agent's wake command (`acx wake DIR` by default) with
 * `--timeline <uuid>` for the agent each event is addressed to, or with --queue enqueues an acx
 * agent's wake for `acx worker`. Tokens, signing keys and the probe key come from the environment
 * (router-agents.ts says which).
 */
export function register(program: Command): void {
  program
    .command('router')
    .description("wake agents for a BaseCradle platform's events (one wake per event, serialized per agent): signed webhook deliveries, or --poll")
    .option('--agents <list>', 'handle=DIR pairs, comma-separated: which acx agent answers as which platform user; handle=exec:PROGRAM [ARG…] for another harness\'s wake command')
    .option('--registry-file <file>', 'the agents, one line each: handle recipient-uuid token-variable wake command… (env ACX_ROUTER_REGISTRY; see docs/platform.md)')
    .option('--platform <url>', "the BaseCradle platform's URL (env BASECRADLE_BASE_URL; default http://127.0.0.1:4700)")
    .option('--port <n>', 'port to receive deliveries on; 0 picks a free one (env ACX_ROUTER_PORT; default 4710)', process.env.ACX_ROUTER_PORT ?? '4710')
    .option('--home <dir>', "the router's own home: router.db, the deliveries and their outcomes (default <state home>/router)")
    .option('--poll <interval>', "also read each agent's unseen items from the platform this often, e.g. 30s or 5m, for a platform that cannot reach the router (env ACX_ROUTER_POLL)")
    .option('--queue <url>', 'enqueue each acx agent\'s wake on the pg-boss queue in this PostgreSQL database for `acx worker` instead of running it here (env ACX_ROUTER_QUEUE)')
    .addOption(passEnvOption())
    .addOption(replayWindowOption())
    .addOption(noWarmOption())
    .action(async (options: RouterFlags & { agents?: string; registryFile?: string; platform?: string; port: string; home?: string; poll?: string; queue?: string }) => {
      const env = process.env;
      const logger = commandLogger('service', env);
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliExit('usage', `acx router: --port must be an integer from 0 to 65535, not "${options.port}".`);
      const { passEnv, replayWindow, warm } = resolveRouterFlags('acx router', options, env);
      const pollIntervalMs = pollInterval(options.poll ?? (env.ACX_ROUTER_POLL?.trim() || undefined), options.poll !== undefined ? '--poll' : 'ACX_ROUTER_POLL');
      const platformUrl = options.platform ?? env.BASECRADLE_BASE_URL ?? 'http://127.0.0.1:4700';
      const agents = await resolveRoutedAgents(
        { agents: options.agents, registryFile: options.registryFile ?? (env.ACX_ROUTER_REGISTRY?.trim() || undefined) },
        { env, platformUrl, passEnv, polling: pollIntervalMs !== undefined, logger },
      );
      const queueUrl = options.queue ?? env.ACX_ROUTER_QUEUE;
      if (queueUrl !== undefined && storeKindOf(queueUrl) !== 'postgres') throw new CliExit('usage', 'acx router: --queue takes a postgres:// URL (the database acx worker reads).');
      // pg-boss is loaded only by a router that enqueues.
      const queue = queueUrl ? await (await import('../../worker/queue.ts')).openWakeQueue(queueUrl, logger) : undefined;
      const home = options.home ?? join(resolveStateHome(undefined), 'router');
      // A delivery for a recipient not hosted here, signed with the shared secret, is answered 200 (not 401).
      const sharedSecrets = env.ACX_ROUTER_WEBHOOK_SECRET ? [env.ACX_ROUTER_WEBHOOK_SECRET] : [];
      const probeSecret = env[PROBE_SECRET_VARIABLE] || undefined;
      const router = await startRouter({
        agents,
        platformUrl,
        databasePath: join(home, 'router.db'),
        logger,
        port,
        passEnv,
        replayWindow,
        warm,
        sharedSecrets,
        ...(probeSecret ? { probeSecret } : {}),
        ...(pollIntervalMs !== undefined ? { pollIntervalMs } : {}),
        ...(queue ? { queue } : {}),
      });
      await untilStopped(
        () => process.stdout.write(`${router.url}\n`),
        () => router.close().then(() => queue?.close()),
      );
    });
}

/** `--poll 30s`: at least a second, so a slip of the unit (30ms) does not hammer the platform. */
function pollInterval(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < 1000) throw new CliExit('usage', `acx router: ${name} takes an interval of at least 1s, such as 30s, 5m or 1h, not "${raw}".`);
  return ms;
}
