import { existsSync } from 'node:fs';
import { BaseCradleClient } from '../../channel/client.ts';
import { ForbiddenError, NotFoundError } from '../../channel/errors.ts';
import { resolveSettings } from '../../app/settings.ts';
import { errorMessage } from '../../core/errors.ts';
import type { ChannelState } from '../../store/channel-state.ts';
import { channelStatePath, openChannelState } from '../../store/open-channel-state.ts';
import { Journal } from '../../store/journal.ts';
import { redactUrl } from '../../store/store-url.ts';
import { type JournalStore, SqliteJournalStore } from '../../store/journal-store.ts';
import type { Logger } from '../../util/logger.ts';

const SESSION_PREFIX = 'timeline:';

/**
 * `acx cleanup <agent> --sweep | --timeline <uuid>`: what a timeline agent keeps per timeline (its
 * transcript, marks, seen-set and claims). The sweep asks the platform about each timeline on disk
 * once: a 404 purges it; a 403, a 200 and any other failure keep it (a transient error is not
 * evidence). `--timeline` purges one unconditionally. Memory is the agent's and is never touched.
 */
export async function runTimelineCleanup(agent: string, options: Record<string, unknown>, logger: Logger): Promise<void> {
  const settings = await resolveSettings({ agent, ...(options as object), allowPortable: true }, { logger });
  const dryRun = Boolean(options.dryRun);
  const report = { agent: settings.agent.id, stateDir: settings.stateDir, dryRun, removed: [] as Array<{ timeline: string; messages: number }>, kept: [] as Array<{ timeline: string; reason: string }> };
  const say = (line: string) => {
    if (!options.json) process.stdout.write(`${line}\n`);
  };
  // On SQLite, opened only if it exists: cleaning up never creates a store file.
  const state: ChannelState | undefined =
    settings.store || existsSync(channelStatePath(settings.stateDir))
      ? await openChannelState({ stateDir: settings.stateDir, storeUrl: settings.store, agentId: settings.storeScope })
      : undefined;
  const journal: JournalStore | undefined = settings.store
    ? await (await import('../../store/postgres-journal.ts')).PostgresJournalStore.open(settings.store, { agentId: settings.storeScope })
    : existsSync(settings.journalPath)
      ? new SqliteJournalStore(new Journal(settings.journalPath))
      : undefined;
  try {
    const onDisk = new Set([
      ...((await state?.timelines()) ?? []),
      ...((await journal?.listSessions()) ?? []).filter((s) => s.id.startsWith(SESSION_PREFIX)).map((s) => s.id.slice(SESSION_PREFIX.length)),
    ]);
    const purge = async (timeline: string) => {
      const sessionId = `${SESSION_PREFIX}${timeline}`;
      const messages = journal && (await journal.hasSession(sessionId)) ? (await journal.messages(sessionId)).length : 0;
      if (!dryRun) {
        await journal?.deleteSession(sessionId);
        await state?.purge(timeline);
      }
      report.removed.push({ timeline, messages });
      say(`${dryRun ? 'would remove' : 'removed'} timeline ${timeline} (${messages} messages, its marks and claims)`);
    };
    const only = options.timeline as string | undefined;
    if (only !== undefined) {
      await purge(only);
    } else {
      const client = new BaseCradleClient(process.env.BASECRADLE_BASE_URL ? { baseUrl: process.env.BASECRADLE_BASE_URL } : {});
      for (const timeline of [...onDisk].sort()) {
        try {
          await client.timelines.get(timeline);
          report.kept.push({ timeline, reason: 'kept' });
          say(`kept timeline ${timeline}`);
        } catch (error) {
          if (NotFoundError.isInstance(error)) await purge(timeline);
          else {
            const reason = ForbiddenError.isInstance(error) ? 'kept-forbidden' : `skipped this run: ${errorMessage(error)}`;
            report.kept.push({ timeline, reason });
            say(`kept timeline ${timeline}: ${reason}`);
          }
        }
      }
      if (onDisk.size === 0) say(`Nothing to sweep: ${settings.agent.name} keeps no timeline in ${settings.store ? redactUrl(settings.store) : settings.stateDir}.`);
    }
    if (report.removed.length > 0 && !dryRun) logger.info('cleanup', { agent: settings.agent.id, removed_timelines: report.removed.length });
    if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  } finally {
    await state?.close();
    await journal?.close();
  }
}
