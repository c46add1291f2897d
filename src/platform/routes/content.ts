import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import type { Hono, MiddlewareHandler } from 'hono';
import { transaction } from '../../store/database.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import {
  type AssetRow,
  findAssetByFileToken,
  insertAsset,
  insertMessage,
  insertTask,
  type MessageRow,
  pendingTaskCount,
  setTaskStatus,
  TASK_STATUSES,
  type TaskRow,
  viewableRecord,
} from '../data/items.ts';
import { assetContentType, INLINE_TYPES } from '../content-type.ts';
import { assertUnlocked, viewableTimeline, VISIBLE_TIMELINES } from '../data/timelines.ts';
import { isAdmin } from '../data/users.ts';
import { assetTooLarge, jsonBody, member, requiredText } from '../http/body.ts';
import { newUuid } from '../ids.ts';
import { choiceFilter, listPage, uuidFilter } from '../pagination.ts';
import { invalid, PlatformError } from '../problem.ts';
import { type PlatformContext, type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import { hiddenCharacterProblem } from '../visible-names.ts';
import { keyedCreate, replay, scopeOf } from './keyed-create.ts';

/** Messages, assets (and their files) and tasks: what peers post on timelines. */
export function registerContentRoutes(app: Hono<PlatformEnv>, rt: PlatformRuntime, auth: MiddlewareHandler<PlatformEnv>): void {
  // ---- messages
  app.post('/timelines/:timeline_id/messages', auth, async (c) => {
    const body = await jsonBody(c);
    const { row } = keyedCreate<MessageRow>(rt, c, {
      timelineId: c.req.param('timeline_id'),
      kind: 'message',
      create: (timeline) => insertMessage(rt.db, timeline, c.get('user'), requiredText(member(body, 'message'), 'body')),
      event: { name: 'message.created', resource: (m) => ({ type: 'message', uuid: m.uuid }) },
    });
    return c.json({ message: wireFor(rt, c).message(row) }, 201);
  });
  app.get('/messages', auth, (c) => {
    const page = listPage<MessageRow>(rt.db, itemList(c, 'messages'));
    const wire = wireFor(rt, c);
    return c.json({ messages: page.rows.map((m) => wire.message(m)), next_cursor: page.nextCursor });
  });
  app.get('/messages/:id', auth, (c) => c.json({ message: wireFor(rt, c).message(viewableRecord<MessageRow>(rt.db, 'message', c.req.param('id'), c.get('user')).record) }));

  // ---- assets: multipart `asset[file]` and `asset[description]`; the file is kept under the home.
  app.post('/timelines/:timeline_id/assets', auth, async (c) => {
    // Checked before the upload is read, and again when the record is written (keyedCreate).
    const timeline = viewableTimeline(rt.db, c.req.param('timeline_id'), c.get('user'));
    const earlier = replay<AssetRow>(rt, scopeOf(c, timeline, 'asset'));
    if (earlier) {
      c.header('Idempotent-Replayed', 'true');
      return c.json({ asset: wireFor(rt, c).asset(earlier) }, 201);
    }
    assertUnlocked(timeline);
    const form = await multipart(c);
    const file = form['asset[file]'];
    const description = form['asset[description]'];
    if (!(file instanceof File)) throw invalid({ 'asset[file]': ['must be attached (multipart/form-data field "asset[file]")'] });
    if (description !== undefined && typeof description !== 'string') throw invalid({ 'asset[description]': ['must be text'] });
    const hidden = hiddenCharacterProblem(file.name);
    if (hidden) throw invalid({ 'asset[file]': [`name ${hidden}`] });
    if (file.size > rt.maxAssetBytes) throw assetTooLarge(rt.maxAssetBytes);
    const bytes = Buffer.from(await file.arrayBuffer());
    const uuid = newUuid();
    const path = join(rt.home.assetsDir, timeline.uuid, uuid);
    mkdirSync(join(rt.home.assetsDir, timeline.uuid), { recursive: true, mode: 0o700 });
    // Written before the record, removed again if the record is not: no record without its file.
    writeFileAtomic(path, bytes, 0o600);
    let result: { row: AssetRow; replayed: boolean };
    try {
      result = keyedCreate<AssetRow>(rt, c, {
        timelineId: timeline.uuid,
        kind: 'asset',
        create: (current) =>
          insertAsset(rt.db, current, c.get('user'), {
            uuid,
            description: description?.trim() ?? '',
            filename: safeFilename(file.name),
            contentType: assetContentType(bytes, file.type, file.name),
            byteSize: bytes.length,
            checksum: createHash('md5').update(bytes).digest('base64'),
          }),
        event: { name: 'asset.created', resource: (a) => ({ type: 'asset', uuid: a.uuid }) },
      });
    } catch (error) {
      rmSync(path, { force: true });
      throw error;
    }
    if (result.replayed) rmSync(path, { force: true });
    return c.json({ asset: wireFor(rt, c).asset(result.row) }, 201);
  });
  app.get('/assets', auth, (c) => {
    const page = listPage<AssetRow>(rt.db, itemList(c, 'assets'));
    const wire = wireFor(rt, c);
    return c.json({ assets: page.rows.map((a) => wire.asset(a)), next_cursor: page.nextCursor });
  });
  app.get('/assets/:id', auth, (c) => c.json({ asset: wireFor(rt, c).asset(viewableRecord<AssetRow>(rt.db, 'asset', c.req.param('id'), c.get('user')).record) }));

  // The file's URL is its capability (an unguessable token), so a page can show it in an <img>.
  // It is served so it cannot act as a page of this origin: no sniffing, sandboxed, and
  // downloaded rather than shown unless its type (read from its bytes at upload) is one of INLINE_TYPES.
  app.get('/files/:token/:name', (c) => {
    const asset = findAssetByFileToken(rt.db, c.req.param('token'));
    const path = asset ? join(rt.home.assetsDir, asset.timeline_uuid, asset.uuid) : undefined;
    if (!asset || !path || !existsSync(path)) throw new PlatformError('not_found', 'No such file.');
    const inline = INLINE_TYPES.has(asset.content_type);
    return c.body(Readable.toWeb(createReadStream(path)) as ReadableStream, 200, {
      'content-type': asset.content_type,
      'content-length': String(asset.byte_size),
      'content-disposition': `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(asset.filename)}`,
      'content-security-policy': "sandbox; default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'",
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, max-age=3600',
    });
  });

  // ---- tasks: activate at `activate_at` (ISO 8601; a time with no zone is read as UTC, the account's zone).
  app.post('/timelines/:timeline_id/tasks', auth, async (c) => {
    const me = c.get('user');
    const body = await jsonBody(c);
    const { row, replayed } = keyedCreate<TaskRow>(rt, c, {
      timelineId: c.req.param('timeline_id'),
      kind: 'task',
      create: (timeline) => {
        const task = member(body, 'task');
        const instructions = requiredText(task, 'instructions');
        const activateAt = parseTime(requiredText(task, 'activate_at'));
        if (pendingTaskCount(rt.db, timeline.uuid, me.uuid) >= me.max_pending_tasks) {
          throw invalid({ base: [`you have ${me.max_pending_tasks} pending tasks on this timeline, the most your account may`] });
        }
        return insertTask(rt.db, timeline, me, instructions, activateAt);
      },
    });
    if (!replayed) rt.kickTasks();
    return c.json({ task: wireFor(rt, c).task(row) }, 201);
  });
  app.get('/tasks', auth, (c) => {
    const query = itemList(c, 'tasks');
    const status = choiceFilter('status', c.req.query('status'), TASK_STATUSES);
    if (status) {
      query.where.push('status = :status');
      query.params.status = status;
    }
    const page = listPage<TaskRow>(rt.db, query);
    const wire = wireFor(rt, c);
    return c.json({ tasks: page.rows.map((t) => wire.task(t)), next_cursor: page.nextCursor });
  });
  app.get('/tasks/:id', auth, (c) => c.json({ task: wireFor(rt, c).task(viewableRecord<TaskRow>(rt.db, 'task', c.req.param('id'), c.get('user')).record) }));

  // Author or admin; only a pending task. A locked timeline does not stop it: withdrawing is cleanup.
  app.post('/tasks/:task_id/cancellation', auth, (c) => {
    const me = c.get('user');
    const task = transaction(rt.db, () => {
      const { record } = viewableRecord<TaskRow>(rt.db, 'task', c.req.param('task_id'), me);
      if (record.user_uuid !== me.uuid && !isAdmin(me)) throw new PlatformError('not_task_author', 'Only the author of this task may cancel it.');
      if (record.status !== 'pending') throw new PlatformError('task_not_pending', `This task is ${record.status}; only a pending task can be cancelled.`);
      return setTaskStatus(rt.db, record, 'cancelled');
    });
    return c.json({ task: wireFor(rt, c).task(task) });
  });
}

/** A cross-timeline list's query: the timelines you can view, optionally one (`?timeline=`). */
export function itemList(c: PlatformContext, table: string) {
  const where = [`timeline_uuid IN ${VISIBLE_TIMELINES}`];
  const params: Record<string, string> = { viewer: c.get('user').uuid };
  const timeline = uuidFilter('timeline', c.req.query('timeline'));
  if (timeline) {
    where.push('timeline_uuid = :timeline');
    params.timeline = timeline;
  }
  return { table, where, params, before: c.req.query('before') };
}

async function multipart(c: PlatformContext): Promise<Record<string, string | File>> {
  if (!/^multipart\/form-data/i.test(c.req.header('content-type') ?? '')) {
    throw invalid({ base: ['an asset is uploaded as multipart/form-data with the fields "asset[file]" and "asset[description]"'] });
  }
  try {
    return (await c.req.parseBody()) as Record<string, string | File>;
  } catch {
    throw invalid({ base: ['the multipart body could not be read'] });
  }
}

const ZONED_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

function parseTime(text: string): Date {
  const value = text.trim();
  const match = ZONED_TIME.exec(value);
  const when = match ? new Date(match[3] ? value : `${value}Z`) : new Date(Number.NaN);
  if (Number.isNaN(when.getTime())) throw invalid({ activate_at: [`"${text}" is not an ISO 8601 time (e.g. 2026-06-10T15:00:00Z)`] });
  return when;
}

/** A filename safe to store and to put in a URL and a header: no directories (control characters were refused). */
function safeFilename(name: string): string {
  const base = basename(name.replace(/\\/g, '/')).replace(/"/g, '').trim();
  // By code point, so the cut never leaves half a surrogate pair.
  return [...(base === '' || base === '.' || base === '..' ? 'file' : base)].slice(0, 200).join('');
}
