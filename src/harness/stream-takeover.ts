import { randomUUID } from 'node:crypto';
import { HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import type { TurnStreamKey, TurnStreamStore } from '../store/turn-streams.ts';
import type { Session } from './agent-session.ts';
import type { HarnessStreamResult } from './harness-results.ts';
import { encodePart } from './stream-entries.ts';
import type { TurnStreams } from './turn-streams.ts';

/**
 * A kept stream whose writer is gone while it is open: the process running its turn died. The
 * first reader to notice takes the stream over (the store lets exactly one) and takes the turn
 * up, by evidence, as any interrupted turn is (recovery.ts): the continuation streams onto the
 * same stream, so every reader of it gets the rest. Where the turn is no longer unfinished (it
 * ended, or a later message already took it up) the stream is only ended; where the harness
 * cannot take up an interrupted turn, it ends saying so.
 */
export async function takeUpTurn(
  store: TurnStreamStore,
  streams: TurnStreams,
  key: TurnStreamKey,
  take: { harnessId: string; session: () => Promise<Session>; continueStream: (session: Session) => HarnessStreamResult },
): Promise<void> {
  const writer = randomUUID();
  if (!(await store.takeOver(key, writer))) return;
  // Until the continuation opens the stream as its own, this writer keeps it alive (where writers live by expiry).
  const renewal = store.renewEveryMs === undefined ? undefined : setInterval(() => void store.renew(key, writer).catch(() => {}), store.renewEveryMs);
  renewal?.unref();
  // Both are refused once the continuation has the stream: then it ends it itself.
  const end = async (error?: unknown) => {
    clearInterval(renewal);
    if (error !== undefined) await store.append(key, writer, [encodePart({ type: 'error', error })]);
    await store.finish(key, writer);
    streams.written(key);
  };
  try {
    const session = await take.session();
    if (!session.inner.continuation) {
      await session.detach().catch(() => {});
      return await end(
        new HarnessCapabilityUnsupportedError(`The process streaming this turn stopped, and ${take.harnessId} cannot take up a turn its process left unfinished.`, {
          hint: 'Send the message again, or run the agent on the engine harness.',
        }),
      );
    }
    const unfinished = await session.inner.continuation();
    if (unfinished?.turnId !== key.turnId || unfinished.suspendedBy !== 'interrupted') return await end();
    streams.logger.info('turn taken up', { session: key.sessionId, turn: key.turnId, reason: 'the process streaming it stopped' });
    void take
      .continueStream(session)
      .result.then(
        () => end(),
        (error: unknown) => end(error),
      )
      .catch((error: unknown) => streams.logger.warn('turn stream not ended', { session: key.sessionId, turn: key.turnId, error: String(error) }));
  } catch (error) {
    await end(error);
  }
}
