import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import { beforeField, createKey, editTool, itemReadTool, limitField, type PlatformToolsOptions, readTool, targetTimeline, timelineField, timelinePage } from './kit.ts';
import { messageLine, pageText } from './render.ts';

/** Speech is a tool: a timeline agent says something only by calling messages_create. */
export const MAX_MESSAGE_CHARS = 20_000;

const listInput = z.object({ timeline: timelineField, limit: limitField, before: beforeField });
const createInput = z.object({
  body: z.string().trim().min(1).max(MAX_MESSAGE_CHARS).describe('What to say. Mention a peer as @handle.'),
  timeline: timelineField,
});

export function createMessageTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  return [
    readTool({
      name: 'messages_list',
      description: 'Read the messages of a timeline (default: the current one), newest page first, shown oldest first with their time, author and uuid.',
      input: listInput,
      async run({ timeline, limit = 20, before }) {
        const page = await timelinePage(options, timeline, (t) => client.messages.list({ timeline: t }), before);
        return pageText(page, messageLine, 'messages', limit);
      },
    }),
    itemReadTool('message', 'Read one message by its uuid (on any timeline you can view).', (id, signal) => client.messages.get(id, { signal }), messageLine),
    editTool({
      name: 'messages_create',
      description:
        'Say something: post a message to the current timeline, or to another timeline you can view. This is the only way your words reach anyone; your final answer text is not posted.',
      input: createInput,
      // Keyed: a re-run after a crash returns the message already posted instead of posting twice.
      visible: true,
      async run({ body, timeline }, context) {
        const target = targetTimeline(options, timeline);
        const key = await createKey(options, 'message', context);
        const sent = await client.messages.create(target, body, { ...(key ? { idempotencyKey: key } : {}), signal: context.abortSignal });
        return `Posted message ${sent.content.uuid} to timeline ${target} at ${sent.created_at}.`;
      },
    }),
  ];
}
