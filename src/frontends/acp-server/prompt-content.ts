import type * as acp from '@agentclientprotocol/sdk';
import type { UserContent } from 'ai';
import { AcxError } from '../../core/errors.ts';

/**
 * An ACP prompt (content blocks) as the user message the engine takes. Text and resource links
 * are the protocol baseline; embedded text resources are inlined with their URI; images pass
 * through only when the model can see them. Anything else is refused with a clear error rather
 * than dropped, so the user never believes the agent read something it did not.
 */
export interface PromptAcceptance {
  images: boolean;
}

export function promptCapabilities(accept: PromptAcceptance): acp.PromptCapabilities {
  return { image: accept.images, audio: false, embeddedContext: true };
}

type Part = Exclude<UserContent, string>[number];

export function toUserContent(blocks: readonly acp.ContentBlock[], accept: PromptAcceptance): string | UserContent {
  const parts: Part[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: block.text });
        break;
      case 'resource_link':
        parts.push({ type: 'text', text: `[resource: ${block.title ?? block.name} <${block.uri}>]` });
        break;
      case 'resource': {
        const resource = block.resource;
        if ('text' in resource) {
          parts.push({ type: 'text', text: `[resource <${resource.uri}>]\n${resource.text}` });
        } else {
          throw new AcxError('unsupported-content', `The prompt embeds binary content (${resource.mimeType ?? 'unknown type'}, ${resource.uri}), which acx cannot pass to the model.`, {
            hint: 'Send text, a text resource, or an image.',
          });
        }
        break;
      }
      case 'image':
        if (!accept.images) {
          throw new AcxError('unsupported-content', 'The prompt holds an image, but this agent\'s model does not take images.', {
            hint: 'Send text only, or choose a model that accepts images.',
          });
        }
        parts.push({ type: 'file', mediaType: block.mimeType, data: block.data });
        break;
      case 'audio':
        throw new AcxError('unsupported-content', 'The prompt holds audio, which acx does not take.', { hint: 'Send text instead.' });
      default:
        throw new AcxError('unsupported-content', `The prompt holds a content block of type "${(block as { type: string }).type}", which acx does not know.`, {
          hint: 'Send text content blocks.',
        });
    }
  }
  if (parts.length === 0) {
    throw new AcxError('usage', 'The prompt is empty.', { hint: 'Send at least one text content block.' });
  }
  // A plain string keeps the journal and the model request simple when the prompt is only text.
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => (p as { text: string }).text).join('\n');
  return parts;
}
