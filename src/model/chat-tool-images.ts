import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { delegatingModel } from './delegating-model.ts';

/**
 * The Chat Completions wire has no image in a tool message (OpenAI's `tool` role takes text; so
 * do the OpenAI-compatible servers), and the AI SDK's chat providers send an image a tool returned
 * as its base64 inside JSON text, which a model reads as noise. On that wire, each tool message
 * whose results hold images keeps a line in their place, and is followed by a user message that
 * carries them as image parts, saying which call returned them: the way other harnesses reach a
 * vision model there. The results themselves, and everything else in the prompt, are unchanged.
 */
export function withToolImagesAsUserMessages(model: LanguageModelV4): LanguageModelV4 {
  const move = (options: LanguageModelV4CallOptions): LanguageModelV4CallOptions => ({ ...options, prompt: toolImagesAsUserMessages(options.prompt) });
  return delegatingModel(model, {
    doGenerate: (options) => model.doGenerate(move(options)),
    doStream: (options) => model.doStream(move(options)),
  });
}

type ToolMessage = Extract<LanguageModelV4Message, { role: 'tool' }>;
type UserPart = Extract<LanguageModelV4Message, { role: 'user' }>['content'][number];
type FilePart = Extract<UserPart, { type: 'file' }>;

export function toolImagesAsUserMessages(prompt: LanguageModelV4Prompt): LanguageModelV4Prompt {
  if (!prompt.some((message) => message.role === 'tool')) return prompt;
  const out: LanguageModelV4Prompt = [];
  for (const message of prompt) {
    if (message.role !== 'tool') {
      out.push(message);
      continue;
    }
    const shown: UserPart[] = [];
    const content = message.content.map((part): ToolMessage['content'][number] => {
      if (part.type !== 'tool-result' || part.output.type !== 'content') return part;
      const images = part.output.value.filter((inner): inner is FilePart => inner.type === 'file' && inner.mediaType.startsWith('image'));
      if (images.length === 0) return part;
      shown.push({ type: 'text', text: `The ${images.length === 1 ? 'image' : `${images.length} images`} ${part.toolName} returned (call ${part.toolCallId}):` }, ...images);
      const value = part.output.value.map((inner) =>
        images.includes(inner as FilePart) ? { type: 'text' as const, text: `[${(inner as FilePart).mediaType} image: shown in the next message]` } : inner,
      );
      // All text now: sent as text, not as the JSON of a parts list.
      const texts = value.flatMap((inner) => (inner.type === 'text' ? [inner.text] : []));
      return { ...part, output: texts.length === value.length ? { type: 'text', value: texts.join('\n') } : { ...part.output, value } };
    });
    out.push({ ...message, content });
    if (shown.length > 0) out.push({ role: 'user', content: shown });
  }
  return out;
}
