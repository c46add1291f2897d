import { type Command, Option } from 'commander';
import type { PreparedAgent } from '../../../app/prepare.ts';
import { wake } from '../../wake/session.ts';
import { resolveWakeSettings } from '../../wake/settings.ts';
import { locateAgent, resolveSettings, type ResolvedSettings, resolveStoreUrl } from '../../../app/settings.ts';
import { openWakeStore } from '../../../store/open-wake-store.ts';
import { leaseLostExit } from '../lease-lost-exit.ts';
import { CliExit } from '../output.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { addWakeTuningOptions } from '../wake-options.ts';
import { readStdin } from '../stdin.ts';
import { isSwitchedOff } from '../../../app/switches.ts';
import { nodeCrypto } from '../../../util/node-crypto.ts';
import { commandLogger } from '../command-logger.ts';
import { jsonOption } from '../common-options.ts';

/**
 * `acx wake <agent> --session S [--event ID] [message]`: run once per event, as a router or a
 * queue worker would. Records the event, answers every pending event of the session in order,
 * prints each reply, exits. Safe to deliver the same event twice and to kill at any moment.
 */
export function register(program: Command): void {
  addWakeTuningOptions(
    addRunOptions(
      program
        .command('wake')
        .description('answer an event (and anything still pending) for one session, then exit: one process per event')
        .argument('<agent>', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent')
        .argument('[message...]', 'the event\'s message; read from stdin when piped; omit both to answer only what is pending')
        .option('--sender <name>', "who wrote the message, shown to the model with it (env ACX_EVENT_SENDER)")
        .addOption(new Option('--sender-kind <kind>', "human or ai: a peer AI's message is read at human speed first (env ACX_EVENT_SENDER_KIND)").choices(['human', 'ai']))
        .option('--not-addressed', 'the message does not call for a reply (ambient talk, a heartbeat): no reply nudge in tool speech mode (env ACX_EVENT_ADDRESSED=0)')
        .option('--self <handle>', "the agent's own handle: an event whose --sender is this is its own message routed back, recorded but never answered (env ACX_SELF_HANDLE)")
        .addOption(jsonOption('one line per answered batch of events (one turn), {sessionId, eventIds, turnId, text, unspoken, resumed}'))
        .option('--timeline <uuid>', 'wake on a BaseCradle timeline: read what is unseen there and answer through the platform tools, on the platform BASECRADLE_BASE_URL names with the token BASECRADLE_TOKEN (env BASECRADLE_TIMELINE)')
        .option('--message <uuid>', 'with --timeline: the message the delivery is about (env BASECRADLE_MESSAGE)')
        .option('--asset <uuid>', 'with --timeline: the asset the delivery is about (env BASECRADLE_ASSET)')
        .option('--event <id>', "the event's id: the same id delivered again is answered once; with --timeline, the webhook event the delivery is about (env ACX_EVENT_ID, or BASECRADLE_EVENT with --timeline)"),
      // Wake mode runs on acx's engine only (its journal makes a killed wake safe to repeat).
      ['--harness'],
    ),
  ).action(async (agent: string, messageWords: string[], options: Record<string, unknown>, command: Command) => {
    const env = process.env;
    const logger = commandLogger('service', env);
    const timeline = (options.timeline as string | undefined) ?? env.BASECRADLE_TIMELINE;
    if (timeline) {
      if (messageWords.length > 0) throw new CliExit('usage', 'acx wake --timeline reads its messages from the platform; give no message words.');
      const { runTimelineWake } = await import('../timeline-wake.ts');
      await runTimelineWake(agent, timeline, options, logger, command);
      return;
    }
    const sessionId = (options.session as string | undefined) ?? env.ACX_SESSION;
    if (!sessionId) {
      throw new CliExit('usage', 'acx wake: give the session to wake with --session <id> (or ACX_SESSION).');
    }
    const harness = env.ACX_HARNESS?.trim();
    if (harness && harness !== 'engine') {
      throw new CliExit(
        'usage',
        `acx wake: wake mode needs acx's native engine (its journal is what makes a killed wake safe to repeat); ACX_HARNESS=${harness} cannot resume a turn in a new process.`,
      );
    }
    const text = messageWords.length > 0 ? messageWords.join(' ') : await readStdin();
    const eventId = (options.event as string | undefined) ?? env.ACX_EVENT_ID;
    if (eventId !== undefined && !text.trim()) {
      throw new CliExit('usage', `acx wake: event ${eventId} has no message; give it as an argument or on stdin.`);
    }
    const sender = (options.sender as string | undefined) ?? env.ACX_EVENT_SENDER;
    const senderKind = (options.senderKind as string | undefined) ?? env.ACX_EVENT_SENDER_KIND;
    if (senderKind !== undefined && senderKind !== 'human' && senderKind !== 'ai') {
      throw new CliExit('usage', `acx wake: the sender kind must be human or ai, not "${senderKind}".`);
    }
    const addressed = options.notAddressed !== true && !isSwitchedOff(env.ACX_EVENT_ADDRESSED);
    const event = text.trim()
      ? {
          id: eventId ?? nodeCrypto().randomUUID(),
          text,
          ...(sender ? { sender } : {}),
          ...(senderKind ? { senderKind: senderKind as 'human' | 'ai' } : {}),
          ...(addressed ? {} : { addressed: false }),
        }
      : undefined;
    const selfHandle = ((options.self as string | undefined) ?? env.ACX_SELF_HANDLE)?.trim() || undefined;
    const { breaker, pacing, maxAttempts } = resolveWakeSettings(options, env);
    if (event && eventId === undefined) {
      logger.warn('wake event without id', { event: event.id, note: 'a repeated delivery cannot be recognised; pass --event' });
    }
    const flags = runFlags(agent, { ...options, session: sessionId });
    // Only what the agent is and where its state lives comes before the event is recorded; the rest
    // of the configuration is read now but, if it is broken, fails the wake in its agent's start,
    // after the event was recorded, so the first wake that can start answers it.
    const location = await locateAgent(flags, { logger });
    let settings: ResolvedSettings | undefined;
    let configError: unknown;
    try {
      settings = await resolveSettings(flags, { logger, location });
    } catch (error) {
      configError = error;
    }
    // With ACX_STORE / --store on PostgreSQL, the inbox and leases live there beside the journal.
    const store = await openWakeStore({
      stateDir: location.stateDir,
      storeUrl: resolveStoreUrl(flags, env),
      agentId: location.storeScope,
      onLeaseLost: (lost) => logger.error('wake lease lost', { session: lost, reason: 'not renewed in time; another wake may answer this session' }),
    });
    let prepared: PreparedAgent | undefined;
    try {
      try {
        const outcome = await wake({
          // Prepared only once this wake holds the lease: the event is recorded first, whatever happens.
          agent: async () => {
            if (!settings) throw configError;
            // Imported here: a duplicate, busy or declined wake never loads the engine or a provider.
            const { prepareAgent } = await import('../../../app/prepare.ts');
            const { reconcileBeforeRun } = await import('../../../app/upgrade-on-run.ts');
            reconcileBeforeRun(settings, logger);
            return (prepared = await prepareAgent(settings, { logger })).agent;
          },
          store,
          sessionId,
          event,
          breaker,
          pacing,
          maxAttempts,
          selfHandle,
          deliveryId: env.ACX_DELIVERY_ID,
          ...(settings?.model?.modelId ? { model: { provider: settings.model.provider, modelId: settings.model.modelId } } : {}),
          maxSteps: settings?.maxSteps,
          logger,
          onReply: (items, result) => {
            if (options.json) {
              const eventIds = items.map((item) => item.eventId);
              process.stdout.write(
                `${JSON.stringify({ sessionId, eventIds, turnId: result.turnId, text: result.text, unspoken: result.unspoken, resumed: result.resumed })}\n`,
              );
            } else if (result.text) {
              process.stdout.write(result.text.endsWith('\n') ? result.text : `${result.text}\n`);
            }
          },
        });
        // Busy exits 0 like an answer (the live wake holding the session answers the event); a lost
        // lease does not, since nobody may be answering it (see leaseLostExit).
        if (outcome.outcome === 'lease-lost') throw leaseLostExit(`session ${sessionId}`);
        if (outcome.failedEvents.length > 0) {
          throw new CliExit('failed', `acx wake: set aside after ${maxAttempts} failed attempts: ${outcome.failedEvents.join(', ')}.`);
        }
      } finally {
        await prepared?.close();
      }
    } finally {
      await store.close();
    }
  });
}
