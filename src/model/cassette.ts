import { readFileSync } from 'node:fs';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { AcxError, ConfigError, ReplayMismatchError } from '../core/errors.ts';
import { BRIEF_TAG } from './brief-tag.ts';
import { nodeCrypto } from '../util/node-crypto.ts';

/**
 * Record / replay of model calls. `--record FILE` saves every request and the response the
 * model streamed back; `--replay FILE` serves those responses in order without a network or a
 * key, and fails naming the step when the agent asks something the recording did not.
 *
 * Both kinds of call (streamed and not) are kept in one form, the stream parts, and served back
 * in whichever form the replaying agent asks for.
 *
 * Requests are compared by a digest of what the agent decided to send (roles, texts, tool calls,
 * tool names). Excluded: the volatile brief (clock, step counter), which changes on every run by
 * design, and tool *outputs*, which come from the environment (memory, files) and may differ on
 * a machine that has run the agent before.
 */
export interface CassetteInteraction {
  step: number;
  /** `system` is a short digest of the system messages, to say *what* differs on a mismatch. */
  request: { digest: string; messages: number; lastUser: string; tools: string[]; system?: string };
  parts: unknown[];
}

export interface Cassette {
  format: 'acx.cassette/1';
  provider: string;
  modelId: string;
  interactions: CassetteInteraction[];
}

function textOfPart(part: { type: string; text?: string }): string {
  return part.type === 'text' && typeof part.text === 'string' ? part.text : '';
}

/** The provider-independent shape of a request, with the volatile brief masked. */
export function describeRequest(options: LanguageModelV4CallOptions): CassetteInteraction['request'] {
  const normalized = options.prompt.map((message) => normalizeMessage(message));
  const tools = (options.tools ?? []).map((tool) => tool.name).sort();
  const digest = nodeCrypto().createHash('sha256').update(JSON.stringify({ normalized, tools })).digest('hex');
  const lastUser = [...options.prompt].reverse().find((m) => m.role === 'user' && !isBriefOnly(m));
  const lastUserText =
    lastUser && Array.isArray(lastUser.content)
      ? lastUser.content.map((part) => textOfPart(part as { type: string; text?: string })).join(' ')
      : '';
  const systemText = options.prompt
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : ''))
    .join('\n');
  const system = nodeCrypto().createHash('sha256').update(systemText).digest('hex').slice(0, 16);
  return { digest, messages: options.prompt.length, lastUser: lastUserText.slice(0, 120), tools, system };
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

/** Says in words what differs between a recorded request and the one the agent makes now. */
function describeDifference(recorded: CassetteInteraction['request'], now: CassetteInteraction['request']): string {
  const differences: string[] = [];
  const added = now.tools.filter((t) => !recorded.tools.includes(t));
  const removed = recorded.tools.filter((t) => !now.tools.includes(t));
  if (added.length > 0) differences.push(`tools not in the recording: ${added.join(', ')}`);
  if (removed.length > 0) differences.push(`recorded tools now missing: ${removed.join(', ')}`);
  if (recorded.system !== undefined && recorded.system !== now.system) differences.push('the instructions (system prompt) differ');
  if (recorded.lastUser !== now.lastUser) differences.push(`the last user text was "${recorded.lastUser}", now "${now.lastUser}"`);
  if (recorded.messages !== now.messages) differences.push(`${recorded.messages} messages were recorded, now ${now.messages}`);
  if (differences.length === 0) differences.push('the conversation so far (messages or tool calls) differs');
  return differences.join('; ');
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

function revive(part: unknown): LanguageModelV4StreamPart {
  const copy = { ...(part as Record<string, unknown>) };
  if (copy.type === 'response-metadata' && typeof copy.timestamp === 'string') copy.timestamp = new Date(copy.timestamp);
  return copy as LanguageModelV4StreamPart;
}

function replayStream(parts: unknown[]): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(revive(part));
      controller.close();
    },
  });
}

/** A non-streamed result as the stream parts that would have carried it. */
export function resultToParts(result: LanguageModelV4GenerateResult): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  if (result.response) {
    parts.push({ type: 'response-metadata', ...(result.response.id ? { id: result.response.id } : {}), ...(result.response.timestamp ? { timestamp: result.response.timestamp } : {}), ...(result.response.modelId ? { modelId: result.response.modelId } : {}) });
  }
  result.content.forEach((item, index) => {
    const meta = 'providerMetadata' in item && item.providerMetadata ? { providerMetadata: item.providerMetadata } : {};
    const id = String(index);
    if (item.type === 'text') {
      parts.push({ type: 'text-start', id, ...meta }, { type: 'text-delta', id, delta: item.text, ...meta }, { type: 'text-end', id, ...meta });
    } else if (item.type === 'reasoning') {
      parts.push({ type: 'reasoning-start', id, ...meta }, { type: 'reasoning-delta', id, delta: item.text, ...meta }, { type: 'reasoning-end', id, ...meta });
    } else {
      parts.push(item as LanguageModelV4StreamPart);
    }
  });
  parts.push({
    type: 'finish',
    usage: result.usage,
    finishReason: result.finishReason,
    ...(result.providerMetadata ? { providerMetadata: result.providerMetadata } : {}),
  });
  return parts;
}

/** Stream parts folded back into the non-streamed result they describe. */
export function partsToResult(parts: readonly LanguageModelV4StreamPart[]): LanguageModelV4GenerateResult {
  const content: LanguageModelV4Content[] = [];
  const open = new Map<string, { type: 'text' | 'reasoning'; text: string; providerMetadata?: unknown }>();
  let finish: Extract<LanguageModelV4StreamPart, { type: 'finish' }> | undefined;
  let response: LanguageModelV4GenerateResult['response'];
  for (const part of parts) {
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start': {
        const item = { type: part.type === 'text-start' ? ('text' as const) : ('reasoning' as const), text: '', ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}) };
        open.set(`${item.type}:${part.id}`, item);
        content.push(item as LanguageModelV4Content);
        break;
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const item = open.get(`${part.type === 'text-delta' ? 'text' : 'reasoning'}:${part.id}`);
        if (item) item.text += part.delta;
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        const item = open.get(`${part.type === 'text-end' ? 'text' : 'reasoning'}:${part.id}`);
        if (item && part.providerMetadata) item.providerMetadata = part.providerMetadata;
        break;
      }
      case 'finish':
        finish = part;
        break;
      case 'response-metadata':
        response = { ...(part.id ? { id: part.id } : {}), ...(part.timestamp ? { timestamp: part.timestamp } : {}), ...(part.modelId ? { modelId: part.modelId } : {}) };
        break;
      case 'stream-start':
      case 'tool-input-start':
      case 'tool-input-delta':
      case 'tool-input-end':
      case 'ping':
      case 'raw':
      case 'error':
        break;
      default:
        content.push(part as LanguageModelV4Content);
    }
  }
  if (!finish) throw new AcxError('replay-incomplete', 'The recorded call has no finish part; record it again with --record.');
  return {
    content,
    finishReason: finish.finishReason,
    usage: finish.usage,
    ...(finish.providerMetadata ? { providerMetadata: finish.providerMetadata } : {}),
    ...(response ? { response } : {}),
    warnings: [],
  } as LanguageModelV4GenerateResult;
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
        `Replay mismatch at model call ${step}: ${describeDifference(interaction.request, request)}.`,
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
    async doGenerate(options) {
      return partsToResult(serve(options).parts.map(revive));
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
  const record = (request: CassetteInteraction['request'], parts: unknown[]) => {
    cassette.interactions.push({ step: cassette.interactions.length + 1, request, parts });
    writeFileAtomic(path, `${JSON.stringify(cassette, null, 1)}\n`);
  };
  return {
    specificationVersion: 'v4',
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: inner.supportedUrls,
    async doGenerate(options) {
      const request = describeRequest(options);
      const result = await inner.doGenerate(options);
      record(request, resultToParts(result));
      return result;
    },
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
          record(request, parts);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(tee) };
    },
  };
}
