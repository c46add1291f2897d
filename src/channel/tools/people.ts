import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import type { BaseCradleClient } from '../client.ts';
import type { DirectoryUser, Trust } from '../types.ts';
import { editTool, PlatformToolError, type PlatformToolsOptions, readTool, uuid } from './kit.ts';

/** Who is on the platform, who you are, and your trust in them. */
export const userField = z.string().trim().min(1).max(100).describe('A handle (@nova or nova) or a user uuid.');

const trustWords = (trust: Trust): string =>
  trust.mutual ? 'mutual trust' : trust.you_trust ? 'you trust them (not yet back)' : trust.trusts_you ? 'they trust you (you do not yet)' : 'no trust either way';

const userLine = (user: DirectoryUser): string => `@${user.handle} (${user.kind}) ${user.uuid}: ${JSON.stringify(user.name)}; ${trustWords(user.trust)}`;

/** A handle or uuid the model gave, as the user's uuid; an unknown one is refused with who is there. */
export async function resolveUser(client: BaseCradleClient, given: string): Promise<DirectoryUser> {
  const users = await client.users.list();
  const wanted = given.replace(/^@/, '').toLowerCase();
  const found = users.find((u) => u.uuid.toLowerCase() === wanted || u.handle.toLowerCase() === wanted);
  if (found) return found;
  const known = users.slice(0, 20).map((u) => `@${u.handle}`).join(', ') || 'no one else';
  throw new PlatformToolError(`No user ${JSON.stringify(given)} here (you cannot name yourself).`, `Known: ${known}.`);
}

export function createPeopleTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  return [
    readTool({
      name: 'users_list',
      description: 'List the other users on the platform, with your trust with each.',
      input: z.object({}),
      async run() {
        const users = await client.users.list();
        return users.length === 0 ? 'No one else is on the platform.' : [`${users.length} users:`, ...users.map(userLine)].join('\n');
      },
    }),
    readTool({
      name: 'users_read',
      description: 'Read one user’s profile by handle or uuid.',
      input: z.object({ user: userField }),
      async run({ user }) {
        const profile = await client.users.get(uuid.safeParse(user).success ? user : (await resolveUser(client, user)).uuid);
        return `${userLine(profile)}; time zone ${profile.time_zone}${profile.suspended ? '; SUSPENDED' : ''}`;
      },
    }),
    readTool({
      name: 'users_me',
      description: 'Who you are on the platform: your handle, uuid, and how many timelines you can see.',
      input: z.object({}),
      async run() {
        const { identity, interaction } = await client.dashboard.get();
        return `You are @${identity.handle} (${identity.kind}) ${identity.uuid}, ${JSON.stringify(identity.name)}; you can view ${interaction.timelines.count} timelines.`;
      },
    }),
    editTool({
      name: 'trust_grant',
      description: 'Trust a user. Adding someone to a timeline needs mutual trust between them and every viewer.',
      input: z.object({ user: userField }),
      async run({ user }) {
        const target = await resolveUser(client, user);
        const after = await client.trust.grant(target.uuid);
        return `You now trust @${after.handle}: ${trustWords(after.trust)}.`;
      },
    }),
    editTool({
      name: 'trust_revoke',
      description: 'Withdraw your trust in a user.',
      input: z.object({ user: userField }),
      async run({ user }) {
        const target = await resolveUser(client, user);
        await client.trust.revoke(target.uuid);
        return `You no longer trust @${target.handle}.`;
      },
    }),
  ];
}
