import type * as acp from '@agentclientprotocol/sdk';
import type { UserContent } from 'ai';
import { AcxError, HarnessCapabilityUnsupportedError, errorMessage } from '../../core/errors.ts';
import type { NormalizedSchema } from '../../tools/schema.ts';

/** What a turn sends the agent (its prompt as ACP content blocks) and reads back (structured output). */

export function promptBlocks(prompt: string | UserContent, caps: acp.PromptCapabilities | undefined): acp.ContentBlock[] {
  if (typeof prompt === 'string') return [{ type: 'text', text: prompt }];
  const blocks: acp.ContentBlock[] = [];
  for (const part of prompt) {
    if (part.type === 'text') blocks.push({ type: 'text', text: part.text });
    else if (part.type === 'image' || (part.type === 'file' && String(part.mediaType ?? '').startsWith('image/'))) {
      if (!caps?.image) throw new HarnessCapabilityUnsupportedError('This ACP agent does not accept images in prompts (promptCapabilities.image is not advertised).');
      const data = part.type === 'image' ? part.image : part.data;
      const mimeType = (part.mediaType as string | undefined) ?? 'image/png';
      if (typeof data === 'string' && !/^https?:/.test(data)) blocks.push({ type: 'image', data, mimeType });
      else if (data instanceof Uint8Array) blocks.push({ type: 'image', data: Buffer.from(data).toString('base64'), mimeType });
      else throw new HarnessCapabilityUnsupportedError('Image prompts for ACP agents must be inline data, not URLs.');
    } else {
      throw new HarnessCapabilityUnsupportedError(`Prompt part type "${part.type}" cannot be sent to an ACP agent.`, { hint: 'Send text (and images when the agent supports them).' });
    }
  }
  return blocks;
}

/** The turn's structured output: its text as JSON (a fenced block is accepted), checked against the schema. */
export function structuredOutput(harnessId: string, text: string, schema: NormalizedSchema): unknown {
  try {
    const parsed = JSON.parse(text.trim().replace(/^```(?:json)?\s*|\s*```$/g, '')) as unknown;
    const checked = schema.validate(parsed);
    if (!checked.ok) throw new Error((checked.errors ?? []).join('; '));
    return checked.value;
  } catch (error) {
    throw new AcxError('acp-output-invalid', `${harnessId} did not answer with JSON matching the output schema: ${errorMessage(error)}`, { hint: 'Check the profile\'s outputSchemaMapping.' });
  }
}
