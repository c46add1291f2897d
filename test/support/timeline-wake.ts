// A timeline wake run in this process against a test platform, on the native engine with a
// scripted model: for tests that inject what a CLI wake cannot (a clock, a dead claim holder).
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { BaseCradleClient } from '../../src/channel/client.ts';
import type { ChannelState } from '../../src/store/channel-state.ts';
import { PostgresChannelState } from '../../src/store/postgres-channel-state.ts';
import { SqliteChannelState } from '../../src/store/sqlite-channel-state.ts';
import type { PacingSettings } from '../../src/frontends/wake/pacing.ts';
import { type TimelineWakeOptions, type TimelineWakeOutcome, timelinePlatformTools, wakeOnTimeline } from '../../src/frontends/wake/timeline.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import type { PermissionMode } from '../../src/tools/permission.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import type { TestPlatform } from './platform.ts';
import { scriptedModel, type ScriptFn, type ScriptedModel } from './scripted-model.ts';
import { scaled } from './time-scale.ts';

export const NO_PACING: PacingSettings = { enabled: false, charsPerSecond: 17, floorMs: 0, maxBuilds: 1 };

/** A claim holder whose process has exited: what it leaves in flight is taken over. */
export const deadHolder = () => ({ pid: spawnSync(process.execPath, ['-e', '0']).pid!, host: hostname(), started: null });

/** Whether a tool result follows the turn's prompt (its batch), as opposed to an earlier turn's. */
export function answeredThisTurn(options: LanguageModelV4CallOptions): boolean {
  const text = (message: (typeof options.prompt)[number]) => (message.role === 'user' ? message.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '');
  const batch = options.prompt.findLastIndex((message) => message.role === 'user' && !text(message).startsWith('<acx-brief>'));
  return options.prompt.slice(batch).some((message) => message.role === 'tool');
}

/** Each turn posts one message, then ends. */
export const replyOnce: ScriptFn = (options) => (answeredThisTurn(options) ? { text: 'answered' } : { toolCalls: [{ name: 'messages_create', input: { body: 'Read you.' } }] });

export interface InProcessWake {
  home?: string;
  script?: ScriptFn;
  holder?: ReturnType<typeof deadHolder>;
  pacing?: PacingSettings;
  extra?: Partial<Pick<TimelineWakeOptions, 'trigger' | 'triggers' | 'now' | 'sleep' | 'breaker' | 'firstWakeWindow' | 'model'>>;
  /** Engine settings for the wake's harness (a small context window makes a turn compact). */
  harness?: Pick<Parameters<typeof createEngineHarness>[0], 'contextTokens' | 'retries'>;
  /** The agent's own tools, beside the platform tools the wake gives it. */
  tools?: Tool[];
  /** The channel state on this PostgreSQL database (claims lapse STATE_LEASE_TTL_MS after the wake); absent: `<home>/channel.db`. */
  storeUrl?: string;
  /** The agent cannot start: making it throws this (a required MCP server down, a broken configuration). */
  agentFails?: Error;
  /** The agent's permission mode (default allow-all, so a test's own tools run unasked). */
  permissionMode?: PermissionMode;
  /** Whether the model reads images (default true). */
  vision?: boolean;
  /** The platform's address as the wake's client reaches it (a proxy in front of it); default the platform's own. */
  via?: string;
  /** A channel state the caller keeps open across wakes, as a worker does (not closed here). */
  state?: ChannelState;
}

/**
 * On PostgreSQL, how long a wake's claims last unrenewed: short, so a lost claim is noticed soon
 * (renewed every third of it), yet one a loaded machine still renews in time.
 */
export const STATE_LEASE_TTL_MS = scaled(300);

export async function wakeInProcess(
  platform: TestPlatform,
  agent: { token: string },
  timeline: string,
  options: InProcessWake = {},
): Promise<{ outcome: TimelineWakeOutcome | { outcome: 'error'; error: unknown }; model: ScriptedModel; logger: ReturnType<typeof createMemoryLogger>; home: string }> {
  const home = options.home ?? mkdtempSync(join(tmpdir(), 'acx-tl-wake-'));
  const model = scriptedModel(options.script ?? replyOnce);
  const logger = createMemoryLogger('debug');
  const state: ChannelState =
    options.state ??
    (options.storeUrl
      ? await PostgresChannelState.open(options.storeUrl, 'nova', { leaseTtlMs: STATE_LEASE_TTL_MS })
      : new SqliteChannelState(join(home, 'channel.db'), options.holder ? { holder: options.holder } : {}));
  try {
    const outcome = await wakeOnTimeline({
      client: new BaseCradleClient({ env: {}, baseUrl: options.via ?? platform.url, token: agent.token }),
      state,
      timeline,
      logger,
      pacing: options.pacing ?? NO_PACING,
      ...options.extra,
      permissionMode: options.permissionMode ?? 'allow-all',
      agent: async (platform, brief) => {
        const platformTools = timelinePlatformTools(platform);
        if (options.agentFails) throw options.agentFails;
        // As prepareAgent does: the brief (the platform's dashboard) is read before the agent starts.
        await brief(platformTools);
        const harness = createEngineHarness({ model: fromLanguageModel(model, { vision: options.vision ?? true }), home, logger, ...options.harness });
        const engineAgent = new HarnessAgent({ harness, tools: [...platformTools, ...(options.tools ?? [])], permissionMode: options.permissionMode ?? 'allow-all', speech: { mode: 'tool', tool: 'messages_create' } });
        return { agent: engineAgent, maxSteps: 6, close: async () => harness.close?.() };
      },
    }).catch((error: unknown) => ({ outcome: 'error' as const, error }));
    return { outcome, model, logger, home };
  } finally {
    if (!options.state) await state.close();
  }
}
