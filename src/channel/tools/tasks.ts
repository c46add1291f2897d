import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import { beforeField, createKey, editTool, itemReadTool, limitField, type PlatformToolsOptions, readTool, targetTimeline, timelineField, timelinePage } from './kit.ts';
import { pageText, taskLine } from './render.ts';
import { activationTime } from './when.ts';

const createInput = z.object({
  instructions: z.string().trim().min(1).max(10_000).describe('What to do when it activates; you will be woken with these words.'),
  when: z.string().min(2).max(64).describe('An offset from now (+90m, +2h, +1d, +2w, +1h30m) or an ISO 8601 time (2026-06-10T15:00:00Z).'),
  timeline: timelineField,
});
const listInput = z.object({
  timeline: timelineField,
  status: z.enum(['pending', 'activated', 'blocked_timeline_locked', 'cancelled']).optional().describe('Only tasks in this state.'),
  limit: limitField,
  before: beforeField,
});

export function createTaskTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  return [
    editTool({
      name: 'tasks_create',
      description: 'Schedule a task on a timeline (default: the current one): at the time given, its instructions activate and wake its viewers.',
      input: createInput,
      visible: true,
      async run({ instructions, when, timeline }, context) {
        const target = targetTimeline(options, timeline);
        const activateAt = activationTime(when, options.now?.() ?? new Date());
        const key = await createKey(options, 'task', context);
        const task = await client.tasks.create(target, { instructions, activateAt }, { ...(key ? { idempotencyKey: key } : {}), signal: context.abortSignal });
        return `Scheduled task ${task.content.uuid} on timeline ${target}: activates ${task.content.activate_at}.`;
      },
    }),
    readTool({
      name: 'tasks_list',
      description: 'List the tasks of a timeline (default: the current one), optionally by status.',
      input: listInput,
      async run({ timeline, status, limit = 20, before }) {
        const page = await timelinePage(options, timeline, (t) => client.tasks.list({ timeline: t, ...(status ? { status } : {}) }), before);
        return pageText(page, taskLine, status ? `${status} tasks` : 'tasks', limit);
      },
    }),
    itemReadTool('task', 'Read one task by its uuid.', (id, signal) => client.tasks.get(id, { signal }), taskLine),
  ];
}
