import { isWarmEvent, WARM_FLAG, type WarmEvent, type WarmReady } from '../router/warm-protocol.ts';
import { EXIT } from './exit-codes.ts';
import type { RehearsedModel } from './warm-rehearsal.ts';

/**
 * `acx --warm-wake <command> [args…]`: a wake process `acx router` starts before its event
 * arrives (src/frontends/router/warm-protocol.ts), so that the event does not pay for Node's and
 * acx's start-up. It loads what the command will need, tells the router it is ready over its IPC
 * channel and waits; handed an event, it sets the event's variables and runs
 * `acx <command> [args…] <event args…>` exactly as a cold process would, once, then exits. Told
 * nothing (the router stopped: the channel closed), it exits 0 having done nothing.
 */

/** What each command a router keeps warm loads lazily on its way to the model, given its arguments: loaded before the event. */
const PRELOAD: Record<string, (args: readonly string[], cli: WarmCli) => Array<Promise<unknown>>> = {
  wake: (args, cli) => {
    const model = loadModelProvider(args[0]);
    // The router's own `acx wake <agent>`: the wake itself is made ready too, all but what its
    // delivery decides (timeline-wake-ahead.ts), once the provider's SDK is loaded. Should that
    // fail, the wake does it all with its event and says what is wrong then.
    const ahead = args.length === 1 ? prepareWakeAhead(args[0]!, model).catch(() => undefined) : undefined;
    return [
      // Built once unused: what the command's first build runs the first time is compiled by then.
      cli.buildProgram('wake'),
      import('./timeline-wake.ts'),
      import('../../app/prepare.ts'),
      import('../../app/builtins.ts'),
      import('../../app/upgrade-on-run.ts'),
      model,
      // The router keeps warm processes for timeline wakes: the platform read, its tools, the model request.
      import('./warm-rehearsal.ts').then(async ({ rehearseHttp, rehearseRecall, rehearseToolSchemas }) => {
        // Loaded first (the same imports as above), so that their lazy schemas are among those built.
        await Promise.all([import('../../app/prepare.ts'), import('../../app/builtins.ts')]);
        await rehearseToolSchemas().catch(() => undefined);
        await rehearseRecall().catch(() => undefined);
        await rehearseHttp(await model);
      }),
      ...(ahead ? [ahead] : []),
    ];
  },
};

/**
 * Loads the SDK of the agent's model provider, which the wake would import on its first model
 * call, and says which model that is (undefined: none chosen, or settings the wake will refuse).
 * The settings are read only to choose it: the wake reads them again once it has its event (an
 * edit in between is seen), and says what is wrong with them, if anything, then.
 */
async function loadModelProvider(agent: string | undefined): Promise<RehearsedModel | undefined> {
  try {
    const [{ resolveSettings }, { resolveModel }, { silentLogger }] = await Promise.all([import('../../app/settings.ts'), import('../../model/providers.ts'), import('../../util/logger.ts')]);
    const settings = await resolveSettings({ ...(agent ? { agent } : {}) }, { logger: silentLogger });
    const chosen = settings.model;
    if (!chosen?.spec) return undefined;
    await resolveModel({ spec: chosen.spec, ...(chosen.surface ? { surface: chosen.surface } : {}), ...(chosen.baseURL ? { baseURL: chosen.baseURL } : {}), vision: chosen.vision });
    return { spec: chosen.spec, ...(chosen.surface ? { surface: chosen.surface } : {}), vision: chosen.vision, params: settings.modelParams };
  } catch {
    // Nothing to load ahead: the wake reports it.
    return undefined;
  }
}

/** Prepares the timeline wake of `agent` ahead of its delivery and holds it for the wake to take. */
async function prepareWakeAhead(agent: string, after: Promise<unknown>): Promise<void> {
  const [{ holdTimelineWakeAhead, prepareTimelineWakeAhead }, { commandLogger }] = await Promise.all([import('./timeline-wake-ahead.ts'), import('./command-logger.ts')]);
  await after;
  const ahead = prepareTimelineWakeAhead(agent, commandLogger('service', process.env));
  holdTimelineWakeAhead(agent, ahead);
  await ahead.catch(() => undefined);
}

/** main.ts's own functions (main.ts is still running when this runs: importing it would wait for itself). */
export interface WarmCli {
  main(argv: readonly string[]): Promise<number>;
  buildProgram(only: string): Promise<unknown>;
}

export async function runWarm(argv: readonly string[], cli: WarmCli): Promise<number> {
  if (!process.send) {
    process.stderr.write(`acx ${WARM_FLAG}: this is how acx router starts a wake before its event; it needs the router's IPC channel. Run the command without --warm-wake.\n`);
    return EXIT.usage;
  }
  // Listening before saying ready: an event sent the moment the router hears it is not missed.
  const handed = new Promise<WarmEvent | 'malformed' | undefined>((resolve) => {
    process.once('message', (message: unknown) => resolve(isWarmEvent(message) ? message : 'malformed'));
    process.once('disconnect', () => resolve(undefined));
  });
  await Promise.all(PRELOAD[argv[0] ?? '']?.(argv.slice(1), cli) ?? []);
  process.send({ warm: 'ready' } satisfies WarmReady);
  const event = await handed;
  // The channel is the router's line to a waiting process only: the wake and what it runs do not keep it.
  if (process.connected) process.disconnect();
  if (event === undefined) return EXIT.ok;
  if (event === 'malformed') {
    process.stderr.write(`acx ${WARM_FLAG}: the router sent something that is not an event; nothing was run.\n`);
    return EXIT.failure;
  }
  for (const [name, value] of Object.entries(event.env)) process.env[name] = value;
  return cli.main([...argv, ...event.args]);
}
