import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import { beforeField, editTool, limitField, platformTool, type PlatformToolsOptions, readTool, targetTimeline, timelineField } from './kit.ts';
import { userField, resolveUser } from './people.ts';
import { itemLine, pageText, timelineLine } from './render.ts';

const participantInput = z.object({ user: userField, timeline: timelineField });

export function createTimelineTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  return [
    platformTool({
      name: 'timelines_create',
      description: 'Create a new timeline (a room) that you own; add participants to it with timelines_add_participant.',
      input: z.object({ name: z.string().trim().min(1).max(200).describe('The timeline’s name.') }),
      kind: 'edit',
      // POST /timelines takes no key: a re-run would make a second room.
      effect: 'unsafe',
      async run({ name }) {
        const made = await client.timelines.create(name);
        return `Created timeline ${made.uuid} ${JSON.stringify(made.name)}.`;
      },
    }),
    readTool({
      name: 'timelines_read',
      description: 'Read a timeline (default: the current one): its name, owner, viewers, lock state and most recent items.',
      input: z.object({ timeline: timelineField }),
      async run({ timeline }) {
        const { timeline: found, items } = await client.timelines.get(targetTimeline(options, timeline));
        const recent = [...items].reverse().map(itemLine);
        return [timelineLine(found), ...(recent.length ? [`${recent.length} recent items, oldest first:`, ...recent] : ['No items yet.'])].join('\n');
      },
    }),
    readTool({
      name: 'timelines_list',
      description: 'List the timelines you own or take part in.',
      input: z.object({ limit: limitField, before: beforeField }),
      async run({ limit = 20, before }) {
        return pageText(await client.timelines.list().page(before), timelineLine, 'timelines', limit);
      },
    }),
    participantTool(options, 'add'),
    participantTool(options, 'remove'),
  ];
}

/** Adding needs ownership and mutual trust between the newcomer and every viewer; both are idempotent. */
function participantTool(options: PlatformToolsOptions, change: 'add' | 'remove'): Tool {
  const adding = change === 'add';
  return editTool({
    name: `timelines_${change}_participant`,
    description: adding
      ? 'Add a user to a timeline you own (default: the current one); they need mutual trust with every viewer.'
      : 'Remove a participant from a timeline you own (default: the current one).',
    input: participantInput,
    async run({ user, timeline }) {
      const target = targetTimeline(options, timeline);
      const who = await resolveUser(options.client, user);
      if (adding) await options.client.timelines.addParticipant(target, who.uuid);
      else await options.client.timelines.removeParticipant(target, who.uuid);
      return `${adding ? 'Added' : 'Removed'} @${who.handle} ${adding ? 'to' : 'from'} timeline ${target}.`;
    },
  });
}
