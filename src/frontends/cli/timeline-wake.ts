import type { Command } from 'commander';
import { BaseCradleClient } from '../../channel/client.ts';
import { isUuid } from '../../channel/ids.ts';
import { locateAgent, resolveSettings } from '../../app/settings.ts';
import { agentWorkspace } from '../../app/workspace.ts';
import type { ChannelState } from '../../store/channel-state.ts';
import type { KeptMcpConnections, McpConnector } from '../../mcp/kept-connections.ts';
import { openChannelState } from '../../store/open-channel-state.ts';
import { resolveWakeSettings } from '../wake/settings.ts';
import { TIMELINE_SPEECH, type TimelineWakeOutcome, timelinePlatformTools, wakeOnTimeline } from '../wake/timeline.ts';
import { takeTimelineWakeAhead, type TimelineWakeAhead } from './timeline-wake-ahead.ts';
import type { Logger } from '../../util/logger.ts';
import { leaseLostExit } from './lease-lost-exit.ts';
import { CliExit } from './output.ts';
import { runFlags } from './run-options.ts';

/**
 * `acx wake <agent> --timeline <uuid> [--message <uuid>]`, as a router runs it per platform event
 * (BASECRADLE_TIMELINE, BASECRADLE_MESSAGE, BASECRADLE_DELIVERY_ID). Exit 0 when answered, when
 * there was nothing new, and for a deleted or locked timeline (a stale delivery); non-zero for a
 * failure the router should retry.
 */
export async function runTimelineWake(agent: string, timeline: string, options: Record<string, unknown>, logger: Logger, command?: Command): Promise<void> {
  const env = process.env;
  // A warm process's wake made ready ahead: the wake closes it, or this does on a usage error.
  const ahead = await takeTimelineWakeAhead(agent, options, command);
  if (!isUuid(timeline)) {
    await ahead?.close();
    throw new CliExit('usage', `acx wake: --timeline must be a timeline uuid, not "${timeline}".`);
  }
  const uuidOption = (flag: 'message' | 'asset' | 'event', variable: string): string | undefined => {
    const value = (options[flag] as string | undefined) ?? env[variable];
    if (value !== undefined && !isUuid(value)) throw new CliExit('usage', `acx wake: --${flag} must be a uuid, not "${value}".`);
    return value;
  };
  let delivery: TimelineDelivery;
  try {
    delivery = {
      timeline,
      message: uuidOption('message', 'BASECRADLE_MESSAGE'),
      asset: uuidOption('asset', 'BASECRADLE_ASSET'),
      event: uuidOption('event', 'BASECRADLE_EVENT'),
      deliveryId: env.BASECRADLE_DELIVERY_ID,
      baseUrl: env.BASECRADLE_BASE_URL,
    };
  } catch (error) {
    await ahead?.close();
    throw error;
  }
  const { outcome } = await wakeTimelineDelivery(agent, delivery, options, logger, {}, ahead);
  if (outcome === 'lease-lost') throw leaseLostExit(`the items of timeline ${timeline}`);
}

/** One platform delivery for an agent: the timeline and what it is about. */
export interface TimelineDelivery {
  timeline: string;
  message?: string | undefined;
  asset?: string | undefined;
  event?: string | undefined;
  deliveryId?: string | undefined;
  /** The platform; absent: the client's default. */
  baseUrl?: string | undefined;
  /** The agent's platform token; absent: BASECRADLE_TOKEN. */
  token?: string | undefined;
}

/**
 * A timeline wake for one delivery, in this process: what `acx wake --timeline` and `acx worker` run.
 * What a long-lived process keeps between deliveries (`acx worker`):
 * - `channelState`: the agent's marks and claims already open (one for all its deliveries, rather
 *   than a new PostgreSQL pool for each); absent, opened here and closed after;
 * - `mcp`: the agent's MCP connections, one kept per timeline, so the timeline's next delivery
 *   does not start its MCP servers again; absent, connected here and closed after.
 * `ahead`: the wake made ready before its delivery (a warm process: timeline-wake-ahead.ts), used
 * when it still holds for this delivery, else closed and everything done here.
 */
export async function wakeTimelineDelivery(
  agent: string,
  delivery: TimelineDelivery,
  options: Record<string, unknown>,
  logger: Logger,
  kept: { channelState?: ChannelState; mcp?: KeptMcpConnections } = {},
  offered?: TimelineWakeAhead,
): Promise<TimelineWakeOutcome> {
  const { channelState } = kept;
  const { timeline } = delivery;
  const sessionId = `timeline:${timeline}`;
  const ahead = offered && aheadHolds(offered, delivery, logger) ? offered : undefined;
  if (offered && !ahead) await offered.close();
  const flags = runFlags(agent, { ...options, session: sessionId });
  const location = ahead?.location ?? (await locateAgent(flags, { logger }));
  const settings = ahead ? { ...ahead.settings, sessionId } : { ...(await resolveSettings(flags, { logger, location })), speech: TIMELINE_SPEECH };
  const { breaker, pacing, contextMessages, onboard } = resolveWakeSettings(options, process.env);
  const client = ahead?.client ?? new BaseCradleClient({ ...(delivery.baseUrl ? { baseUrl: delivery.baseUrl } : {}), ...(delivery.token ? { token: delivery.token } : {}) });
  // On --store / ACX_STORE's PostgreSQL, the marks and claims are shared by this agent's wakes on every host.
  const state = ahead?.state ?? channelState ?? (await openChannelState({ stateDir: location.stateDir, storeUrl: settings.store, agentId: settings.storeScope }));
  try {
    return await wakeOnTimeline({
      client,
      state,
      timeline,
      breaker,
      pacing,
      firstWakeWindow: contextMessages,
      onboard,
      ...(settings.model?.modelId ? { model: { provider: settings.model.provider, modelId: settings.model.modelId } } : {}),
      ...(delivery.message ? { trigger: delivery.message } : {}),
      triggers: { ...(delivery.asset ? { asset: delivery.asset } : {}), ...(delivery.event ? { webhook_event: delivery.event } : {}) },
      ...(delivery.deliveryId ? { deliveryId: delivery.deliveryId } : {}),
      logger,
      workspace: agentWorkspace(settings),
      permissionMode: settings.permissionMode,
      agent: async (platform, brief) => {
        if (ahead?.agentReady) {
          ahead.bind(platform);
          const prepared = await ahead.agentReady.brief(brief);
          return { agent: prepared.agent, maxSteps: settings.maxSteps, close: () => prepared.close() };
        }
        const { prepareAgent } = await import('../../app/prepare.ts');
        // A worker (which keeps its channel state between jobs) reconciled at start-up; a wake made ready ahead, then.
        if (!channelState && !ahead) (await import('../../app/upgrade-on-run.ts')).reconcileBeforeRun(settings, logger);
        const { timelineOutputSink } = await import('../../app/builtins.ts');
        // What a code run makes is shared on the timeline as assets, not left in a workspace nobody reads.
        const prepared = await prepareAgent(settings, {
          logger,
          extraTools: timelinePlatformTools(platform),
          briefSections: brief,
          keepOutput: timelineOutputSink(client, timeline),
          platform: { client, timeline },
          ...(kept.mcp ? { keptMcp: (connect: McpConnector) => kept.mcp!.connector(`timeline:${timeline}`, connect) } : {}),
        });
        return { agent: prepared.agent, maxSteps: settings.maxSteps, close: () => prepared.close() };
      },
    });
  } finally {
    if (ahead) await ahead.close();
    else if (!channelState) await state.close();
  }
}

/** Whether a wake made ready ahead still holds for `delivery`: its files unchanged, the same platform. */
function aheadHolds(ahead: TimelineWakeAhead, delivery: TimelineDelivery, logger: Logger): boolean {
  const why = ahead.stale
    ? "the agent's files changed since"
    : (delivery.baseUrl ?? ahead.baseUrl) !== ahead.baseUrl
      ? ahead.baseUrl === undefined
        ? "it was made before the platform's URL was known"
        : 'the delivery names another platform'
      : undefined;
  if (why) logger.debug('wake prepared ahead not used', { reason: why });
  else logger.debug('wake prepared ahead used');
  return why === undefined;
}
