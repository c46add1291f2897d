import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { AcxError, ConfigError } from '../util/errors.ts';
import { BRIEF_TAG } from './brief-tag.ts';

/**
 * Record / replay of model calls. `--record FILE` saves every request and the response the
 * model streamed back; `--replay FILE` serves those responses in order without a network or a
 * key, and fails naming the step when the agent asks something the recording did not.
 *
 * Requests are compared by a digest of what the agent decided to send (roles, texts, tool calls,
 * tool names). Excluded: the volatile brief (clock, step counter), which changes on every run by
 * design, and tool *outputs*, which come from the environment (memory, files) and may differ on
 * a machine that has run the agent before.
 */
export interface CassetteInteraction {
  step: number;
  request: { digest: string; messages: number; lastUser: string; tools: string[] };
  parts: unknown[];
}

export interface Cassette {
  format: 'acx.cassette/1';
  provider: string;
  modelId: string;
  interactions: CassetteInteraction[];
}

export class ReplayMismatchError extends AcxError {
  constructor(message: string, hint: string) {
    super('replay-mismatch', message, { hint });
    this.name = 'ReplayMismatchError';
  }
}

function textOfPart(part: { type: string; text?: string }): string {
  return part.type === 'text' && typeof part.text === 'string' ? part.text : '';
}

/** The provider-independent shape of a request, with the volatile brief masked. */
export function describeRequest(options: LanguageModelV4CallOptions): CassetteInteraction['request'] {
  const normalized = options.prompt.map((message) => normalizeMessage(message));
  const tools = (options.tools ?? []).map((tool) => tool.name).sort();
  const digest = createHash('sha256').update(JSON.stringify({ normalized, tools })).digest('hex');
  const lastUser = [...options.prompt].reverse().find((m) => m.role === 'user' && !isBriefOnly(m));
  const lastUserText =
    lastUser && Array.isArray(lastUser.content)
      ? lastUser.content.map((part) => textOfPart(part as { type: string; text?: string })).join(' ')
      : '';
  return { digest, messages: options.prompt.length, lastUser: lastUserText.slice(0, 120), tools };
}

function isBriefOnly(message: LanguageModelV4Prompt[number]): boolean {
  return (
    message.role === 'user' &&
    Array.isArray(message.content) &&
    message.content.every((part) => part.type === 'text' && part.text.startsWith(BRIEF_TAG))
  );
}

function normalizeMessage(message: LanguageModelV4Prompt[number]): unknown {
  if (typeof message.content === 'string') {
    return [message.role, message.content.startsWith(BRIEF_TAG) ? BRIEF_TAG : message.content];
  }
  return [
    message.role,
    (message.content as unknown as Array<Record<string, unknown>>).map((part) => {
      switch (part.type) {
        case 'text':
          return (part.text as string).startsWith(BRIEF_TAG) ? BRIEF_TAG : part.text;
        case 'tool-call':
          return ['call', part.toolName, part.input];
        case 'tool-result':
          return ['result', part.toolCallId];
        case 'reasoning':
          return ['reasoning', part.text];
        default:
          return [part.type];
      }
    }),
  ];
}

export function readCassette(path: string): Cassette {
  let parsed: Cassette;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Cassette;
  } catch (error) {
    throw new ConfigError(`Cannot read the cassette ${path}: ${(error as Error).message}`, {
      hint: 'Pass a file written by --record.',
    });
  }
  if (parsed?.format !== 'acx.cassette/1' || !Array.isArray(parsed.interactions)) {
    throw new ConfigError(`${path} is not an acx cassette (format acx.cassette/1).`, {
      hint: 'Pass a file written by --record.',
    });
  }
  return parsed;
}

function replayStream(parts: unknown[]): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) {
        const copy = { ...(part as Record<string, unknown>) };
        if (copy.type === 'response-metadata' && typeof copy.timestamp === 'string') {
          copy.timestamp = new Date(copy.timestamp);
        }
        controller.enqueue(copy as LanguageModelV4StreamPart);
      }
      controller.close();
    },
  });
}

/** A model that answers from a cassette, in order; no network, no key. */
export function createReplayModel(path: string): LanguageModelV4 {
  const cassette = readCassette(path);
  let next = 0;
  const serve = (options: LanguageModelV4CallOptions) => {
    const step = next + 1;
    const interaction = cassette.interactions[next];
    const request = describeRequest(options);
    if (!interaction) {
      throw new ReplayMismatchError(
        `Replay ran out at model call ${step}: ${path} holds ${cassette.interactions.length} recorded call(s).`,
        'The agent made more model calls than were recorded; record the run again with --record.',
      );
    }
    if (interaction.request.digest !== request.digest) {
      throw new ReplayMismatchError(
        `Replay mismatch at model call ${step}: the request differs from the recording ` +
          `(recorded ${interaction.request.messages} messages, last user text "${interaction.request.lastUser}"; ` +
          `now ${request.messages} messages, last user text "${request.lastUser}").`,
        'Replay needs the same agent, prompt and tools as the recorded run; record again with --record to update it.',
      );
    }
    next += 1;
    return interaction;
  };
  return {
    specificationVersion: 'v4',
    provider: cassette.provider,
    modelId: cassette.modelId,
    supportedUrls: {},
    async doGenerate() {
      throw new AcxError('replay-stream-only', 'Cassettes replay streamed calls only.');
    },
    async doStream(options) {
      const interaction = serve(options);
      return { stream: replayStream(interaction.parts) };
    },
  };
}

/** Wraps a model so every streamed call is appended to a cassette file as it completes. */
export function createRecordingModel(inner: LanguageModelV4, path: string): LanguageModelV4 {
  const cassette: Cassette = {
    format: 'acx.cassette/1',
    provider: inner.provider,
    modelId: inner.modelId,
    interactions: [],
  };
  return {
    specificationVersion: 'v4',
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: inner.supportedUrls,
    doGenerate: (options) => inner.doGenerate(options),
    async doStream(options) {
      const request = describeRequest(options);
      const result = await inner.doStream(options);
      const parts: unknown[] = [];
      const tee = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        transform(part, controller) {
          if (part.type !== 'raw') parts.push(part);
          controller.enqueue(part);
        },
        flush() {
          if (parts.some((part) => (part as { type: string }).type === 'error')) return;
          cassette.interactions.push({ step: cassette.interactions.length + 1, request, parts });
          writeFileAtomic(path, `${JSON.stringify(cassette, null, 1)}\n`);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(tee) };
    },
  };
}
