import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import type { ToolContentPart } from '../tools/tool.ts';
import { capTexts, STEP_RESULT_BUDGET } from './caps.ts';

/**
 * Converts what a tool returned into the AI SDK's ToolResultOutput the model reads, and into
 * the capped form the journal keeps.
 */
function isContentParts(value: unknown): value is ToolContentPart[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((part) => part && typeof part === 'object' && (part.type === 'text' || part.type === 'image'))
  );
}

export function describeImage(part: { mediaType: string; data: string }): string {
  const padding = part.data.endsWith('==') ? 2 : part.data.endsWith('=') ? 1 : 0;
  const bytes = Math.floor((part.data.length * 3) / 4) - padding;
  return `[image ${part.mediaType}, ${bytes.toLocaleString('en-US')} bytes: this model reads text only, so the image was not shown]`;
}

export function toToolResultOutput(output: unknown, options: { vision: boolean; onImageDescribed?: (mediaType: string) => void }): ToolResultOutput {
  if (typeof output === 'string') return { type: 'text', value: output };
  const parts = isContentParts(output)
    ? output
    : output && typeof output === 'object' && isContentParts((output as { content?: unknown }).content)
      ? (output as { content: ToolContentPart[] }).content
      : undefined;
  if (parts) {
    if (!parts.some((part) => part.type === 'image')) {
      return { type: 'text', value: parts.map((part) => (part as { text: string }).text).join('\n') };
    }
    return {
      type: 'content',
      value: parts.map((part) =>
        part.type === 'text'
          ? { type: 'text' as const, text: part.text }
          : options.vision
            ? { type: 'file' as const, data: { type: 'data' as const, data: part.data }, mediaType: part.mediaType }
            : (options.onImageDescribed?.(part.mediaType), { type: 'text' as const, text: describeImage(part) }),
      ),
    };
  }
  if (output === undefined) return { type: 'text', value: '' };
  return { type: 'json', value: output as never };
}

export function errorOutput(message: string): ToolResultOutput {
  return { type: 'error-text', value: message };
}

/** The text a result costs in the transcript, with images replaced by a placeholder. */
function persistedText(output: ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'execution-denied':
      return output.reason ?? 'denied';
    case 'content':
      return output.value
        .map((part) =>
          part.type === 'text'
            ? part.text
            : `[${(part as { mediaType?: string }).mediaType ?? 'file'} shown to the model once; not kept]`,
        )
        .join('\n');
    default:
      return JSON.stringify(output);
  }
}

/**
 * A persisted result as a turn's result lists it: what the tool returned (as the journal kept
 * it, so possibly capped), or the error it ended with.
 */
export function resultOf(output: ToolResultOutput): { output: unknown; error?: string } {
  switch (output.type) {
    case 'text':
    case 'json':
      return { output: output.value };
    case 'error-text':
    case 'error-json':
    case 'execution-denied':
      return { output: undefined, error: persistedText(output) };
    default:
      return { output: persistedText(output) };
  }
}

/** Caps one step's results together (water-filled) for the journal. */
export function capStepOutputs(outputs: readonly ToolResultOutput[], budget = STEP_RESULT_BUDGET): ToolResultOutput[] {
  const texts = outputs.map(persistedText);
  const capped = capTexts(texts, budget);
  return outputs.map((output, index) => {
    const text = capped[index]!;
    if (output.type === 'execution-denied') return output;
    if (text === texts[index] && output.type !== 'content') return output;
    return output.type === 'error-text' || output.type === 'error-json'
      ? { type: 'error-text', value: text }
      : { type: 'text', value: text };
  });
}
