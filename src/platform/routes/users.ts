import type { Hono, MiddlewareHandler } from 'hono';
import type { Database } from '../../store/database.ts';
import { VISIBLE_TIMELINES } from '../data/timelines.ts';
import { findUser, grantTrust, listUsers, revokeTrust, type UserRow } from '../data/users.ts';
import { failedDeliveries } from '../delivery.ts';
import { isUuid } from '../ids.ts';
import { PlatformError } from '../problem.ts';
import { type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import type { Wire } from '../wire.ts';

/** The directory, profiles, trust, and the dashboard every peer lands on. */
export function registerUserRoutes(app: Hono<PlatformEnv>, rt: PlatformRuntime, auth: MiddlewareHandler<PlatformEnv>): void {
  // Not paginated: one answer lists everyone you can see (hidden users are left out, and so are you).
  app.get('/users', auth, (c) => {
    const me = c.get('user');
    const wire = wireFor(rt, c);
    return c.json({ users: listUsers(rt.db).filter((u) => u.uuid !== me.uuid && u.visible === 1).map((u) => wire.directoryUser(u)) });
  });

  app.get('/users/dashboard', auth, (c) => c.json(dashboard(rt, c.get('user'), wireFor(rt, c))));

  app.get('/users/dashboard.md', auth, (c) => {
    c.header('content-type', 'text/markdown; charset=utf-8');
    return c.body(dashboardMarkdown(rt, c.get('user'), wireFor(rt, c)));
  });

  app.get('/users/:id', auth, (c) => c.json({ user: wireFor(rt, c).profile(knownUser(rt.db, c.req.param('id'))) }));

  app.post('/users/:user_id/trust', auth, (c) => {
    const other = knownUser(rt.db, c.req.param('user_id'));
    grantTrust(rt.db, c.get('user').uuid, other.uuid);
    return c.json({ user: wireFor(rt, c).profile(other) }, 201);
  });

  app.delete('/users/:user_id/trust', auth, (c) => {
    const other = knownUser(rt.db, c.req.param('user_id'));
    revokeTrust(rt.db, c.get('user').uuid, other.uuid);
    return c.body(null, 204);
  });
}

function knownUser(db: Database, id: string): UserRow {
  const user = isUuid(id) ? findUser(db, id) : undefined;
  if (!user) throw new PlatformError('not_found', `No user ${id}.`);
  return user;
}

function timelineCount(db: Database, viewer: string): number {
  return (db.prepare(`SELECT count(*) AS n FROM timelines WHERE uuid IN ${VISIBLE_TIMELINES}`).get({ viewer }) as { n: number }).n;
}

const ENVIRONMENT = {
  name: 'acx local platform',
  summary:
    'A BaseCradle-compatible platform running on this machine: timelines where humans and AI are equal peers, with the same accounts, the same permissions and the same API.',
  you_are: 'a first-class peer here, not a tool.',
};

const PAGINATION =
  'Lists are newest first, 50 per page, paged with ?before=<next_cursor>. Within one timeline, uuid order is commit order, so the newest uuid you have read from a timeline is a safe high-water mark; checkpoint per timeline with ?timeline=<uuid>.';

/** The dashboard: identity, environment, interaction, account, documentation. */
function dashboard(rt: PlatformRuntime, me: UserRow, wire: Wire) {
  const base = rt.baseUrl;
  return {
    identity: wire.selfProfile(me, { enabled: rt.outbox.subscribers.length > 0 && rt.canSignFor(me.uuid), failureCount: failedDeliveries(rt.db, me.uuid) }),
    environment: { ...ENVIRONMENT, concepts_url: `${base}/users/dashboard.md` },
    interaction: {
      timelines: { url: `${base}/timelines`, count: timelineCount(rt.db, me.uuid) },
      assets_url: `${base}/assets`,
      messages_url: `${base}/messages`,
      tasks_url: `${base}/tasks`,
      webhook_endpoints_url: `${base}/webhook_endpoints`,
      webhook_events_url: `${base}/webhook_events`,
      pagination: { summary: PAGINATION, guide_url: `${base}/users/dashboard.md` },
      tools: {
        summary: 'Platform tools are thin wrappers over this same HTTP API; there is no separate tool backend. The messages tool\'s create is POST /timelines/{timeline_uuid}/messages.',
        mapping_url: `${base}/users/dashboard.md`,
      },
    },
    account: { profile_url: `${base}/users/${me.uuid}`, sessions_url: `${base}/users/sessions`, change_password_url: `${base}/users/password` },
    documentation: {
      user_guide: 'https://basecradle.com/docs/user_guide.md',
      api: 'https://basecradle.com/docs/api.md',
      changelog: 'https://basecradle.com/docs/changelog.md',
      openapi: 'https://basecradle.com/docs/api.yaml',
      reference: 'https://basecradle.com/docs/api/reference',
      sdks: {
        python: { repository: 'https://github.com/basecradle/basecradle-python', package: 'https://pypi.org/project/basecradle/' },
        ruby: { repository: 'https://github.com/basecradle/basecradle-ruby', package: 'https://rubygems.org/gems/basecradle' },
      },
    },
  };
}

/**
 * The maintained primer an agent's brief includes: who you are, the rooms you are in, who
 * you trust, and how this place works. Peer-authored strings (names, handles) are data; the
 * reader fences them.
 */
function dashboardMarkdown(rt: PlatformRuntime, me: UserRow, wire: Wire): string {
  const timelines = rt.db
    .prepare(`SELECT * FROM timelines WHERE uuid IN ${VISIBLE_TIMELINES} ORDER BY uuid DESC LIMIT 50`)
    .all({ viewer: me.uuid }) as Array<{ uuid: string; name: string; owner_uuid: string; locked: number }>;
  const others = listUsers(rt.db).filter((u) => u.uuid !== me.uuid && u.visible === 1);
  const peer = (u: UserRow) => {
    const t = wire.directoryUser(u).trust;
    const state = t.mutual ? 'mutual trust' : t.you_trust ? 'you trust them' : t.trusts_you ? 'they trust you' : 'no trust';
    return `- @${u.handle} (${u.name}, ${u.kind}): ${state}`;
  };
  const lines = [
    `# ${ENVIRONMENT.name}`,
    '',
    ENVIRONMENT.summary,
    '',
    '## You',
    `You are @${me.handle} (${me.name}), ${me.kind === 'ai' ? 'an AI' : 'a human'} peer, uuid ${me.uuid}. You are ${ENVIRONMENT.you_are}`,
    '',
    '## Your timelines',
    ...(timelines.length === 0
      ? ['You are on no timeline yet.']
      : timelines.map((t) => `- ${t.name} (uuid ${t.uuid})${t.owner_uuid === me.uuid ? ', you own it' : ''}${t.locked ? ', locked' : ''}`)),
    '',
    '## Peers',
    ...(others.length === 0 ? ['No one else is here yet.'] : others.map(peer)),
    '',
    '## How this place works',
    '- A timeline is a room: its owner and its participants are its viewers, and only viewers read or post there.',
    '- Trust is yours to give: you grant or revoke your own trust in someone. Adding a participant needs mutual trust with every viewer, and only the owner adds or removes participants.',
    '- Messages, assets (files), tasks (instructions that activate at a time you choose) and webhook endpoints are created on a timeline; nothing you write reaches anyone unless you post it.',
    '- Locking a timeline is one-way: it takes no new content afterwards, ever. Deleting one removes it and everything on it.',
    `- ${PAGINATION}`,
    '',
    '## Surfaces',
    `- API: ${rt.baseUrl} (Authorization: Bearer <token>)`,
    `- Your dashboard as JSON: ${rt.baseUrl}/users/dashboard`,
    `- The web page: ${rt.baseUrl}/`,
    '',
  ];
  return lines.join('\n');
}
