import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import type { BaseCradleClient } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import type { PagedList } from '../pagination.ts';
import { editTool, PlatformToolError, type PlatformToolsOptions, targetTimeline, timelineField } from './kit.ts';

/**
 * lock and delete: the two acts that cannot be undone, each its own tool behind one gate. The
 * call must repeat the timeline's uuid as `confirm`; a bare or mismatched call changes nothing
 * and is refused with a preview of what would be affected, so the model decides knowing it.
 */
const gateInput = z.object({
  timeline: timelineField,
  confirm: z.string().trim().max(100).optional().describe('The timeline’s uuid again, to confirm. Without it nothing happens and you get a preview.'),
});

/** How many of each kind of item to count in a preview before saying "at least". */
const COUNT_LIMIT = 200;

async function count(list: PagedList<unknown>): Promise<string> {
  const n = (await list.toArray(COUNT_LIMIT)).length;
  return n >= COUNT_LIMIT ? `at least ${COUNT_LIMIT}` : String(n);
}

async function preview(client: BaseCradleClient, timeline: string, act: 'lock' | 'delete'): Promise<string> {
  const [{ timeline: found }, me] = await Promise.all([client.timelines.get(timeline), client.dashboard.get()]);
  const viewers = [found.owner, ...found.participants].map((u) => `@${u.handle}`).join(', ');
  const filter = { timeline };
  const [messages, assets, tasks, endpoints] = await Promise.all([
    count(client.messages.list(filter)),
    count(client.assets.list(filter)),
    count(client.tasks.list(filter)),
    count(client.webhookEndpoints.list(filter)),
  ]);
  const holds = `${messages} messages, ${assets} assets, ${tasks} tasks and ${endpoints} webhook endpoints`;
  const what = `timeline ${JSON.stringify(found.name)} (${found.uuid}), owned by @${found.owner.handle}, seen by ${viewers}, holding ${holds}`;
  if (act === 'lock') {
    if (found.locked) return `${what} is already locked.`;
    return `Locking ${what} is one-way: no one, you included, could post messages, assets or tasks there again, and its webhook endpoints would take no deliveries; everything stays readable.`;
  }
  const owner = found.owner.uuid === me.identity.uuid ? '' : ' You are not its owner, so the platform would refuse.';
  return `Deleting ${what} removes it and all of that for every viewer, for good.${owner}`;
}

function gatedTool(options: PlatformToolsOptions, act: 'lock' | 'delete', description: string, perform: (timeline: string) => Promise<string>): Tool {
  return editTool({
    name: act,
    description,
    input: gateInput,
    // Locking twice is locking once; deleting twice leaves it deleted.
    async run({ timeline, confirm }) {
      const target = targetTimeline(options, timeline);
      if (confirm?.toLowerCase() !== target.toLowerCase()) {
        const why = confirm ? `confirm=${JSON.stringify(confirm)} is not this timeline’s uuid` : `${act} needs confirm=<the timeline’s uuid>`;
        throw new PlatformToolError(`Not done: ${why}. ${await preview(options.client, target, act)}`, `To go ahead, call ${act} again with confirm=${target}.`);
      }
      return perform(target);
    },
  });
}

export function createGovernanceTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  return [
    gatedTool(options, 'lock', 'Lock a timeline (default: the current one) for good: it takes no new content, ever. Irreversible; needs confirm=<its uuid>.', async (timeline) => {
      await client.timelines.lock(timeline);
      return `Locked timeline ${timeline}: it takes no new content from now on.`;
    }),
    gatedTool(options, 'delete', 'Delete a timeline you own (default: the current one) and everything on it, for every viewer. Irreversible; needs confirm=<its uuid>.', async (timeline) => {
      try {
        await client.timelines.delete(timeline);
      } catch (error) {
        // A re-run after a crash finds it already gone: that is the outcome asked for.
        if (NotFoundError.isInstance(error)) return `Timeline ${timeline} is gone (it was already deleted).`;
        throw error;
      }
      return `Deleted timeline ${timeline} and everything on it.`;
    }),
  ];
}
