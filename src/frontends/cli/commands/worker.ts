import type { Command } from 'commander';
import { locateAgent, resolveSettings } from '../../../app/settings.ts';
import { reconcileBeforeRun } from '../../../app/upgrade-on-run.ts';
import { agentWorkspace } from '../../../app/workspace.ts';
import { KeptMcpConnections } from '../../../mcp/kept-connections.ts';
import type { ChannelState } from '../../../store/channel-state.ts';
import { storeKindOf } from '../../../store/store-url.ts';
import { openWakeStore } from '../../../store/open-wake-store.ts';
import { waitForPostgres } from '../../../store/postgres-wait.ts';
import { envSlug, parseAgentList } from '../../router/agents.ts';
import { resolveWakeSettings } from '../../wake/settings.ts';
import { DEFAULT_QUEUE_SETTINGS, openWakeQueue, type WakeQueueSettings } from '../../worker/queue.ts';
import { storeWrites, watchAgentFiles } from '../../worker/agent-files.ts';
import { DEFAULT_BUSY_DEFER_SECONDS, startWorker, type WorkerAgent } from '../../worker/worker.ts';
import { CliExit } from '../output.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { addWakeTuningOptions } from '../wake-options.ts';
import { commandLogger } from '../command-logger.ts';

/**
 * `acx worker --agents a=DIR,b=DIR --store postgres://… [--concurrency N]`: answers the wake jobs
 * `acx router --queue` (or any producer) puts on the store's pg-boss queue, as `acx wake` would,
 * until SIGINT/SIGTERM. Run as many as you like, on any host that reaches the database.
 */
export function register(program: Command): void {
  addWakeTuningOptions(
    addRunOptions(
      program
        .command('worker')
        .description("answer wake jobs from the store's PostgreSQL queue (pg-boss), one session at a time across every worker")
        .requiredOption('--agents <list>', "name=DIR pairs, comma-separated: the agents this worker answers for (a job names its agent); for a router's timeline jobs, each one's platform token from BASECRADLE_TOKEN_<NAME>")
        .option('--platform <url>', "the BaseCradle platform's URL (env BASECRADLE_BASE_URL; default the one each timeline job carries)")
        .option('--concurrency <n>', 'jobs this worker answers at once, each for a different session (env ACX_WORKER_CONCURRENCY; default 1)')
        .option('--retry-limit <n>', `retries a job gets before it is dead-lettered, set when the queue is created (default ${DEFAULT_QUEUE_SETTINGS.retryLimit})`)
        .option('--heartbeat <seconds>', `a worker silent this long is taken for dead and its job retried, at least 10 (default ${DEFAULT_QUEUE_SETTINGS.heartbeatSeconds})`)
        .option('--supervise <seconds>', `how often this worker looks for dead workers' jobs (default ${DEFAULT_QUEUE_SETTINGS.superviseSeconds})`)
        .option('--busy-defer <seconds>', `how long a job that found its session or timeline busy is put off, doubled each retry up to 5 minutes (default ${DEFAULT_BUSY_DEFER_SECONDS}, past a dead holder's lease)`),
      // Each job names its session, and a worker runs on acx's engine only.
      ['--session', '--harness'],
    ),
  ).action(async (options: Record<string, unknown>) => {
    const env = process.env;
    const logger = commandLogger('service', env);
    const storeUrl = (options.store as string | undefined) ?? env.ACX_STORE;
    if (storeKindOf(storeUrl) !== 'postgres') {
      throw new CliExit('usage', 'acx worker: give the PostgreSQL store the queue lives in with --store postgres://… (or ACX_STORE).');
    }
    const harness = env.ACX_HARNESS?.trim();
    if (harness && harness !== 'engine') {
      throw new CliExit('usage', `acx worker: workers need acx's native engine (its journal is what lets another worker finish a killed turn); not ACX_HARNESS=${harness}.`);
    }
    let listed: Array<{ name: string; dir: string }>;
    try {
      listed = parseAgentList(options.agents as string);
    } catch (error) {
      throw new CliExit('usage', `acx worker: ${(error as Error).message}`);
    }
    const concurrency = positiveInteger(options.concurrency ?? env.ACX_WORKER_CONCURRENCY, '--concurrency', 1);
    const busyDeferSeconds = positiveInteger(options.busyDefer, '--busy-defer', DEFAULT_BUSY_DEFER_SECONDS);
    const queueSettings: Partial<WakeQueueSettings> = {
      retryLimit: positiveInteger(options.retryLimit, '--retry-limit', DEFAULT_QUEUE_SETTINGS.retryLimit),
      heartbeatSeconds: positiveInteger(options.heartbeat, '--heartbeat', DEFAULT_QUEUE_SETTINGS.heartbeatSeconds),
      superviseSeconds: positiveInteger(options.supervise, '--supervise', DEFAULT_QUEUE_SETTINGS.superviseSeconds),
    };
    if (queueSettings.heartbeatSeconds! < 10) throw new CliExit('usage', 'acx worker: --heartbeat must be at least 10 seconds (pg-boss checks no faster).');
    const { breaker, pacing, maxAttempts } = resolveWakeSettings(options, env);

    // Started while PostgreSQL is down or restarting (a supervisor restarting a killed worker
    // mid-outage): wait for it here, before the agents' stores open, rather than exit.
    await waitForPostgres(storeUrl!, logger);

    const agents: WorkerAgent[] = [];
    // Each agent's marks and claims (channel state), opened by its first timeline job and kept for the rest.
    const channelStates: Array<Promise<ChannelState>> = [];
    const keptConnections: KeptMcpConnections[] = [];
    for (const { name, dir } of listed) {
      const flags = runFlags(dir, { ...options, store: storeUrl });
      const location = await locateAgent(flags, { logger });
      // A broken configuration fails at start-up, before any job is taken: a worker that cannot
      // answer for an agent should not take that agent's jobs.
      const settings = await resolveSettings(flags, { logger, location });
      reconcileBeforeRun(settings, logger);
      let preparations = 0;
      let channelState: Promise<ChannelState> | undefined;
      // The agent's MCP servers stay connected between a timeline's deliveries (one connection per timeline).
      const keptMcp = new KeptMcpConnections({ logger });
      keptConnections.push(keptMcp);
      const openChannel = () => {
        if (!channelState) {
          channelState = import('../../../store/open-channel-state.ts').then(({ openChannelState }) => openChannelState({ stateDir: location.stateDir, storeUrl, agentId: location.storeScope }));
          // A state that failed to open (the server away) is opened again by the next job.
          channelState.catch(() => (channelState = undefined));
          channelStates.push(channelState);
        }
        return channelState;
      };
      agents.push({
        name,
        // On the same database as the journal and the queue: its leases expire, so any host may serve.
        store: await openWakeStore({
          stateDir: location.stateDir,
          storeUrl,
          agentId: location.storeScope,
          onLeaseLost: (sessionId) => logger.error('wake lease lost', { agent: name, session: sessionId, reason: 'not renewed in time; another worker may be answering this session' }),
        }),
        ...(settings.model?.modelId ? { model: { provider: settings.model.provider, modelId: settings.model.modelId } } : {}),
        maxSteps: settings.maxSteps,
        wakeTimeline: async (job) => {
          const variable = `BASECRADLE_TOKEN_${envSlug(name)}`;
          const token = env[variable];
          if (!token) throw new Error(`set ${variable} to @${name}'s platform token to answer its timeline deliveries`);
          const { wakeTimelineDelivery } = await import('../timeline-wake.ts');
          const baseUrl = (options.platform as string | undefined) ?? env.BASECRADLE_BASE_URL ?? job.platformUrl;
          const delivery = { timeline: job.timeline, message: job.message, asset: job.asset, event: job.event, deliveryId: job.deliveryId, baseUrl, token };
          return wakeTimelineDelivery(dir, delivery, { ...options, store: storeUrl }, logger, { channelState: await openChannel(), mcp: keptMcp });
        },
        // Prepared by the first job, kept for the rest, and prepared again (from its files as they
        // are then) by the first job after they change on disk.
        prepare: async () => {
          const { prepareAgent } = await import('../../../app/prepare.ts');
          const current = preparations++ === 0 ? settings : await resolveSettings(flags, { logger, location: await locateAgent(flags, { logger }) });
          const prepared = await prepareAgent(current, { logger });
          return { agent: prepared.agent, close: () => prepared.close() };
        },
        watch: (onChange) =>
          watchAgentFiles([dir, location.configHome], storeWrites(location.stateHome, agentWorkspace(settings)), () => {
            // Servers started from the files as they were: the next deliveries start them afresh.
            void keptMcp.closeIdle();
            onChange();
          }, logger),
      });
    }
    const queue = await openWakeQueue(storeUrl!, logger, queueSettings);
    const worker = await startWorker({ queue, agents, concurrency, breaker, pacing, maxAttempts, logger, busyDeferSeconds });
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    logger.info('worker stopping', { note: 'finishing the jobs it holds' });
    try {
      await worker.stop();
      await queue.close();
      for (const agent of agents) await agent.store.close();
      for (const state of await Promise.allSettled(channelStates)) if (state.status === 'fulfilled') await state.value.close();
    } finally {
      // Whatever failed above (the server away at shutdown), the MCP servers' processes must end,
      // or they would keep this process alive after SIGTERM.
      await Promise.allSettled(keptConnections.map((kept) => kept.close()));
    }
  });
}

function positiveInteger(raw: unknown, name: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new CliExit('usage', `acx worker: ${name} must be a whole number of at least 1, not "${String(raw)}".`);
  return value;
}
