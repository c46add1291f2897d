import type { AsyncIterableStream } from 'ai';
import type { HarnessStreamPart } from '../engine/events.ts';
import type { TurnStreamKey, TurnStreamStore } from '../store/turn-streams.ts';
import { decodePart } from './stream-entries.ts';
import type { TurnStreams } from './turn-streams.ts';
import { type SdkPart, SdkTurn } from './sdk-turn.ts';

/**
 * A kept turn stream read again: every part from the turn's first, then the live rest as it is
 * written, from this process or any other sharing the store, until the stream is finished. The
 * parts are read by number, so none is read twice and none is skipped between the kept ones and
 * the live ones. They come out as the AI SDK's stream parts, made by one SdkTurn over the whole
 * turn (as the call that streamed them made them, with what a reader of the whole turn also needs:
 * see ReplayTurn).
 */

/**
 * The UI's `reset-step` (drop what the current step showed), which the AI SDK's stream parts have
 * no part for: a `custom` part of this kind, which resumeUIStreamResponse sends as `reset-step`.
 */
export const RESET_STEP = { type: 'custom', kind: 'acx.reset-step' } as const satisfies SdkPart;

export interface ReadTurnStreamOptions {
  toolNames: ReadonlySet<string>;
  model: { provider: string; modelId: string };
  /**
   * The stream is open but its writer is gone (its process died): take the turn up, or end the
   * stream. Called once per gone writer; the reader then goes on reading.
   */
  onWriterGone?: (key: TurnStreamKey) => Promise<void>;
}

/** Parts read per look at the store. */
const BATCH = 256;

export function readTurnStream(store: TurnStreamStore, streams: TurnStreams, key: TurnStreamKey, options: ReadTurnStreamOptions): AsyncIterableStream<SdkPart> {
  const cancelled = new AbortController();
  let after = -1;
  let enqueued = 0;
  let finished = false;
  let goneWriter: string | undefined;
  let replay: ReplayTurn;
  const stream = new ReadableStream<SdkPart>({
    start(controller) {
      replay = new ReplayTurn(options, (part) => {
        enqueued += 1;
        controller.enqueue(part);
      });
    },
    // Reads only while the reader wants more: a reader that stops reading stops the looking too.
    async pull(controller) {
      const before = enqueued;
      while (enqueued === before && !cancelled.signal.aborted) {
        const parts = await store.parts(key, after, BATCH);
        for (const part of parts) {
          after = part.seq;
          replay.push(decodePart(part.body));
        }
        if (parts.length > 0) continue;
        // Every part is appended before its stream finishes: once it has, what is read after is all.
        if (finished) return controller.close();
        const info = await store.info(key);
        if (!info || info.status === 'done') {
          finished = true;
          continue;
        }
        if (!info.writerAlive && info.writer !== goneWriter) {
          goneWriter = info.writer;
          await options.onWriterGone?.(key).catch((error: unknown) => streams.logger.warn('turn not taken up', { session: key.sessionId, turn: key.turnId, error: String(error) }));
          continue;
        }
        await streams.nextWrite(key, cancelled.signal);
      }
    },
    cancel() {
      cancelled.abort();
    },
  });
  return stream as AsyncIterableStream<SdkPart>;
}

/**
 * The AI SDK's parts of a whole kept turn, with what its reader needs beyond the parts of each
 * call that streamed it:
 * - A step started again with the same number (the run that took up a crashed turn repeats the
 *   model call the crash cut short, by evidence: its output was never journaled) drops what the
 *   step showed (RESET_STEP) instead of showing a second step.
 * - An approval the turn paused on and a later call answered: the page that answered it holds
 *   the answer, a reader of the whole turn does not; its answer (from what the turn then did with
 *   the call: ran it, or was told it was denied, and why) is shown before the call's outcome.
 */
class ReplayTurn {
  private readonly turn: SdkTurn;
  private readonly emit: (part: SdkPart) => void;
  private readonly toolNames: ReadonlySet<string>;
  /** The step a start-step opened and no finish-step has closed. */
  private openStep: number | undefined;
  /** Approval requests of the run under way, by call; and those the turn paused on, waiting for a later call's answer. */
  private readonly asked = new Map<string, Extract<HarnessStreamPart, { type: 'tool-approval-request' }>>();
  private readonly awaitingAnswer = new Map<string, Extract<HarnessStreamPart, { type: 'tool-approval-request' }>>();

  constructor(options: ReadTurnStreamOptions, emit: (part: SdkPart) => void) {
    this.toolNames = options.toolNames;
    this.emit = emit;
    this.turn = new SdkTurn({ toolNames: options.toolNames, model: options.model, onPart: emit });
  }

  push(part: HarnessStreamPart): void {
    switch (part.type) {
      case 'start-step':
        if (this.openStep !== undefined && part.step <= this.openStep) {
          this.emit(RESET_STEP);
          this.turn.restartStep();
          return;
        }
        this.openStep = part.step;
        break;
      case 'finish-step':
        this.openStep = undefined;
        break;
      case 'tool-approval-request':
        this.asked.set(part.toolCallId, part);
        break;
      case 'finish':
        for (const [id, request] of this.asked) this.awaitingAnswer.set(id, request);
        this.asked.clear();
        break;
      case 'tool-result':
      case 'tool-error':
      case 'tool-output-denied':
        this.answered(part);
        break;
    }
    this.turn.push(part);
  }

  private answered(part: Extract<HarnessStreamPart, { type: 'tool-result' | 'tool-error' | 'tool-output-denied' }>): void {
    this.asked.delete(part.toolCallId);
    const request = this.awaitingAnswer.get(part.toolCallId);
    if (!request) return;
    this.awaitingAnswer.delete(part.toolCallId);
    const denied = part.type === 'tool-output-denied';
    const toolCall = { type: 'tool-call', toolCallId: request.toolCallId, toolName: request.toolName, input: request.input, ...(this.toolNames.has(request.toolName) ? {} : { dynamic: true }) };
    this.emit({ type: 'tool-approval-response', approvalId: request.approvalId, toolCall, approved: !denied, ...(denied && part.reason ? { reason: part.reason } : {}) } as SdkPart);
  }
}
