import { Command } from 'commander';
import { BaseCradleClient } from '../../channel/client.ts';
import { createKey, type PlatformToolsOptions } from '../../channel/tools/kit.ts';
import { type AgentLocation, locateAgent, type ResolvedSettings, resolveSettings } from '../../app/settings.ts';
import { agentWorkspace } from '../../app/workspace.ts';
import type { UnbriefedAgent } from '../../app/prepare.ts';
import type { ChannelState } from '../../store/channel-state.ts';
import { openChannelState } from '../../store/open-channel-state.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { TIMELINE_SPEECH, timelinePlatformTools } from '../wake/timeline.ts';
import { storeWrites, watchAgentFiles } from '../worker/agent-files.ts';
import { addWakeTuningOptions } from './wake-options.ts';

/**
 * A timeline wake made ready before its delivery is known, by a warm process (warm.ts): the
 * agent's settings read, its marks and claims opened, its platform client made and the agent
 * prepared all but its brief, with platform tools that take their timeline, their creates' keys
 * and their turn's images from the wake once it has its delivery (`bind`). The dashboard the brief
 * shows is read with the event, as a cold wake reads it.
 *
 * A wake uses it only if nothing it was made from has changed: the agent's directory and the config
 * home (watched: any change there but what stores write, and it is dropped), the command line
 * (the router's `acx wake <agent>`, the delivery adding only its own flags and the wake tuning's),
 * the platform's URL (the delivery's own). Otherwise the wake closes it and does everything
 * itself, as a cold process would.
 *
 * Not prepared ahead: an agent with MCP servers (a connection left idle until an event may not
 * last), or on an ACP harness (its agent process is per session).
 */
export interface TimelineWakeAhead {
  readonly location: AgentLocation;
  /** Its settings, without a session (the wake adds its timeline's). */
  readonly settings: ResolvedSettings;
  readonly state: ChannelState;
  readonly client: BaseCradleClient;
  /** The platform the client speaks to (undefined: its default, as the warm process was told of none). */
  readonly baseUrl: string | undefined;
  /** The agent, prepared but for its brief; absent when it is prepared with the event (see above). */
  readonly agentReady: UnbriefedAgent | undefined;
  /** Binds the prepared agent's platform tools, output sink and plugins' platform to the wake's. Once. */
  bind(platform: PlatformToolsOptions): void;
  /** Whether the agent's files changed since it was made. */
  readonly stale: boolean;
  /** Closes what it opened: the marks and claims, and the agent unless a wake was bound to it. */
  close(): Promise<void>;
}

/** The options a delivery's command line may add to the warm process's own without changing what was prepared. */
const DELIVERY_OPTIONS = new Set(['timeline', 'message', 'asset', 'event', ...addWakeTuningOptions(new Command()).options.map((option) => option.attributeName())]);

/** Whether `options`, as `command` parsed them for a delivery, are the bare command's (its defaults) but for the delivery's own flags and the wake tuning's. */
function onlyDeliveryOptions(options: Record<string, unknown>, command: Command): boolean {
  const defaults = new Map(command.options.map((option) => [option.attributeName(), option.defaultValue ?? (option.negate ? true : undefined)]));
  return Object.entries(options).every(([name, value]) => DELIVERY_OPTIONS.has(name) || value === defaults.get(name));
}

/** Prepares a timeline wake of `agent` (`acx wake <agent>`, no other flag) ahead of its delivery. */
export async function prepareTimelineWakeAhead(agent: string, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<TimelineWakeAhead> {
  const flags = { agent };
  // Read once for where the agent's workspace is, then watched, then read again for use: an edit
  // made while they are read is not missed. What the config home's upgrade below writes trips the
  // watch too, so the first wake after an upgrade does it all anew.
  const located = await locateAgent(flags, { logger });
  const first = await resolveSettings(flags, { logger, location: located });
  let stale = false;
  const stopWatching = watchAgentFiles([agent, located.configHome], storeWrites(located.stateHome, agentWorkspace(first)), () => (stale = true), logger);
  try {
    const location = await locateAgent(flags, { logger });
    // As wakeTimelineDelivery reads them.
    const settings: ResolvedSettings = { ...(await resolveSettings(flags, { logger, location })), speech: TIMELINE_SPEECH };
    // What a cold wake does before preparing its agent.
    (await import('../../app/upgrade-on-run.ts')).reconcileBeforeRun(settings, logger);
    const baseUrl = env.BASECRADLE_BASE_URL || undefined;
    const client = new BaseCradleClient({ ...(baseUrl ? { baseUrl } : {}), ...(env.BASECRADLE_TOKEN ? { token: env.BASECRADLE_TOKEN } : {}) });
    const state = await openChannelState({ stateDir: location.stateDir, storeUrl: settings.store, agentId: settings.storeScope });
    let bound: PlatformToolsOptions | undefined;
    const wake = (): PlatformToolsOptions => bound ?? notBound();
    let agentReady: UnbriefedAgent | undefined;
    try {
      agentReady = await prepareAgentAhead(settings, client, wake, logger);
    } catch (error) {
      // The wake prepares it again with its event, and says then what is wrong.
      logger.debug('wake not prepared ahead', { error: errorMessage(error) });
    }
    let closed = false;
    return {
      location,
      settings,
      state,
      client,
      baseUrl,
      agentReady,
      bind(platform) {
        if (bound) throw new TypeError('A wake prepared ahead is bound once.');
        bound = platform;
      },
      get stale() {
        return stale;
      },
      async close() {
        if (closed) return;
        closed = true;
        stopWatching();
        // A bound agent is the wake's to close (its prepared agent's close).
        await Promise.allSettled([...(bound ? [] : [agentReady?.close()]), state.close()]);
      },
    };
  } catch (error) {
    stopWatching();
    throw error;
  }
}

/** The agent prepared but for its brief, its platform taken from `wake()` when a tool runs; undefined when it is prepared with the event. */
async function prepareAgentAhead(settings: ResolvedSettings, client: BaseCradleClient, wake: () => PlatformToolsOptions, logger: Logger): Promise<UnbriefedAgent | undefined> {
  const [{ chosenHarness, prepareUnbriefedAgent }, { agentMcpConfigs }, { timelineOutputSink }] = await Promise.all([
    import('../../app/prepare.ts'),
    import('../../app/mcp-drop-ins.ts'),
    import('../../app/builtins.ts'),
  ]);
  if (chosenHarness(settings) !== 'engine' || agentMcpConfigs(settings, logger).configs.length > 0) return undefined;
  const platformTools = timelinePlatformTools({
    client,
    get timeline() {
      return wake().timeline;
    },
    idempotencyKey: (kind, context) => createKey(wake(), kind, context),
    recentToolImages: () => wake().recentToolImages?.() ?? [],
    workspace: agentWorkspace(settings),
  });
  return prepareUnbriefedAgent(settings, {
    logger,
    extraTools: platformTools,
    keepOutput: (output) => timelineOutputSink(client, timelineOf(wake()))(output),
    platform: {
      client,
      get timeline() {
        return timelineOf(wake());
      },
    },
  });
}

function timelineOf(platform: PlatformToolsOptions): string {
  return platform.timeline ?? notBound();
}

function notBound(): never {
  throw new TypeError('This agent was prepared ahead of its wake and is not bound to a timeline yet.');
}

// The one wake prepared ahead in this process, and for which agent.
let held: { agent: string; ahead: Promise<TimelineWakeAhead | undefined> } | undefined;

/** Holds `ahead` for this process's wake of `agent` (warm.ts, before the event). */
export function holdTimelineWakeAhead(agent: string, ahead: Promise<TimelineWakeAhead | undefined>): void {
  held = { agent, ahead: ahead.catch(() => undefined) };
}

/**
 * The wake prepared ahead for `agent`, given the delivery's options as `command` (`acx wake`)
 * parsed them: taken once; undefined when none was, it was for another agent, or the options ask
 * for anything but the delivery's own flags and the wake tuning's (it is then closed).
 */
export async function takeTimelineWakeAhead(agent: string, options: Record<string, unknown>, command: Command | undefined): Promise<TimelineWakeAhead | undefined> {
  const taken = held;
  held = undefined;
  const ahead = await taken?.ahead;
  if (!ahead) return undefined;
  if (!command || taken!.agent !== agent || !onlyDeliveryOptions(options, command)) {
    await ahead.close();
    return undefined;
  }
  // A change to the agent's files made just before the event is noticed before the wake looks.
  await new Promise((resolve) => setImmediate(resolve));
  return ahead;
}
