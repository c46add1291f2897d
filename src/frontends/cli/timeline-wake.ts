import { BaseCradleClient } from '../../channel/client.ts';
import { isUuid } from '../../channel/ids.ts';
import { ChannelState, channelStatePath } from '../../channel/state.ts';
import { agentWorkspace, locateAgent, resolveSettings } from '../../app/settings.ts';
import { resolveWakeSettings } from '../wake/settings.ts';
import { wakeOnTimeline } from '../wake/timeline.ts';
import type { Logger } from '../../util/logger.ts';
import { CliExit } from './output.ts';
import { runFlags } from './run-options.ts';


/**
 * `acx wake <agent> --timeline <uuid> [--message <uuid>]`, as a router runs it per platform event
 * (BASECRADLE_TIMELINE, BASECRADLE_MESSAGE, BASECRADLE_DELIVERY_ID). Exit 0 when answered, when
 * there was nothing new, and for a deleted or locked timeline (a stale delivery); non-zero for a
 * failure the router should retry.
 */
export async function runTimelineWake(agent: string, timeline: string, options: Record<string, unknown>, logger: Logger): Promise<void> {
  const env = process.env;
  if (!isUuid(timeline)) throw new CliExit('usage', `acx wake: --timeline must be a timeline uuid, not "${timeline}".`);
  const uuidOption = (flag: 'message' | 'asset' | 'event', variable: string): string | undefined => {
    const value = (options[flag] as string | undefined) ?? env[variable];
    if (value !== undefined && !isUuid(value)) throw new CliExit('usage', `acx wake: --${flag} must be a uuid, not "${value}".`);
    return value;
  };
  const trigger = uuidOption('message', 'BASECRADLE_MESSAGE');
  const asset = uuidOption('asset', 'BASECRADLE_ASSET');
  const event = uuidOption('event', 'BASECRADLE_EVENT');
  const sessionId = `timeline:${timeline}`;
  const flags = runFlags(agent, { ...options, session: sessionId });
  const location = locateAgent(flags, { logger });
  // Speech is a tool on a timeline: the final text reaches no one; messages_create is the voice.
  const settings = { ...resolveSettings(flags, { logger, location }), speech: { mode: 'tool' as const, tool: 'messages_create' } };
  const { breaker, pacing } = resolveWakeSettings(options, env);
  const client = new BaseCradleClient(env.BASECRADLE_BASE_URL ? { baseUrl: env.BASECRADLE_BASE_URL } : {});
  const state = new ChannelState(channelStatePath(location.stateDir));
  try {
    await wakeOnTimeline({
      client,
      state,
      timeline,
      breaker,
      pacing,
      ...(trigger ? { trigger } : {}),
      triggers: { ...(asset ? { asset } : {}), ...(event ? { webhook_event: event } : {}) },
      ...(env.BASECRADLE_DELIVERY_ID ? { deliveryId: env.BASECRADLE_DELIVERY_ID } : {}),
      logger,
      workspace: agentWorkspace(settings),
      agent: async (platformTools, brief) => {
        const { prepareAgent } = await import('../../app/prepare.ts');
        const { timelineOutputSink } = await import('../../app/builtins.ts');
        // What a code run makes is shared on the timeline as assets, not left in a workspace nobody reads.
        const prepared = await prepareAgent(settings, { logger, extraTools: platformTools, briefSections: brief, keepOutput: timelineOutputSink(client, timeline) });
        return { agent: prepared.agent, maxSteps: settings.maxSteps, close: () => prepared.close() };
      },
    });
  } finally {
    state.close();
  }
}
