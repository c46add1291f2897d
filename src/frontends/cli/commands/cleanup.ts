import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { isUuid } from '../../../channel/ids.ts';
import { join } from 'node:path';
import type { Command } from 'commander';
import { acpSessionsRoot, sessionDirName } from '../../../harness/acp/sandbox.ts';
import { type ResolvedSettings, resolveSettings } from '../../../app/settings.ts';
import { LIBRARY_AGENT, libraryStateDir, resolveStateHome } from '../../../app/paths.ts';
import { Journal } from '../../../store/journal.ts';
import { type JournalStore, SqliteJournalStore } from '../../../store/journal-store.ts';
import { redactUrl } from '../../../store/store-url.ts';
import { wakeStorePath } from '../../../store/open-wake-store.ts';
import { SqliteWakeStore } from '../../../store/sqlite-wake-store.ts';
import type { WakeStore } from '../../../store/wake-store.ts';
import { CliExit } from '../output.ts';
import { commandLogger } from '../command-logger.ts';
import { configHomeOption, dryRunOption, homeOption, jsonOption, storeOption } from '../common-options.ts';

/**
 * `acx cleanup <agent> --session S | --idle-days N`: removes what a session left on this machine
 * (its transcript, turns and tool-call ledger in the journal; its inbox, lease and breaker
 * record in wake.db; the sandbox home of an ACP agent session kept with --session). The agent's memory is the agent's, not a session's, and stays. A session
 * a live wake is answering is never removed; the sweep also skips sessions with an unfinished
 * turn or pending events, which a later wake would still finish.
 */
export function register(program: Command): void {
  program
    .command('cleanup')
    .description("remove a finished session's transcript and wake state (--session), every session idle for N days (--idle-days), or a timeline agent's deleted timelines (--sweep, --timeline)")
    .argument('[agent]', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent; omit it for a library app\'s journal (createEngineHarness({ home }) with --home)')
    .option('--session <id>', 'the session to remove')
    .option('--sweep', "a timeline agent: ask the platform about each timeline it keeps state for; a deleted one's transcript, marks and claims go")
    .option('--timeline <uuid>', "a timeline agent: remove one timeline's transcript, marks and claims, whatever the platform says")
    .option('--idle-days <n>', 'remove every session with no activity for this many days (env ACX_CLEANUP_IDLE_DAYS)')
    .addOption(dryRunOption())
    .addOption(jsonOption('{agent, stateDir, dryRun, removed, kept}: each removed {id, messages, wakeEvents, acpSessions}, or {timeline, messages}; each kept {id or timeline, reason}'))
    .addOption(homeOption())
    .addOption(configHomeOption())
    .addOption(storeOption())
    .action(async (agent: string | undefined, options: Record<string, unknown>) => {
      const logger = commandLogger('service');
      if (options.sweep || options.timeline !== undefined) {
        if (options.session !== undefined || options.idleDays !== undefined) {
          throw new CliExit('usage', 'acx cleanup: --sweep and --timeline are for timelines; give them without --session or --idle-days.');
        }
        if (options.timeline !== undefined && !isUuid(options.timeline as string)) {
          throw new CliExit('usage', `acx cleanup: --timeline must be a timeline uuid, not "${String(options.timeline)}".`);
        }
        if (agent === undefined) throw new CliExit('usage', 'acx cleanup: --sweep and --timeline clean a timeline agent; name it.');
        const { runTimelineCleanup } = await import('../timeline-cleanup.ts');
        await runTimelineCleanup(agent, options, logger);
        return;
      }
      const sessionId = options.session as string | undefined;
      const idleRaw = (options.idleDays as string | undefined) ?? process.env.ACX_CLEANUP_IDLE_DAYS;
      if ((sessionId === undefined) === (idleRaw === undefined)) {
        throw new CliExit('usage', 'acx cleanup: give exactly one of --session <id>, --idle-days <n>, --sweep or --timeline <uuid>.');
      }
      const idleDays = idleRaw === undefined ? undefined : Number(idleRaw);
      if (idleDays !== undefined && (!Number.isFinite(idleDays) || idleDays <= 0)) {
        throw new CliExit('usage', `acx cleanup: --idle-days must be a positive number of days, not "${idleRaw}".`);
      }
      const dryRun = Boolean(options.dryRun);
      // Cleaning runs nothing from a cartridge, so a portable one's sessions may go (tampered is still refused).
      const settings = agent === undefined ? libraryHome(options.home as string | undefined) : await resolveSettings({ agent, ...(options as object), allowPortable: true }, { logger });
      const report: CleanupReport = { agent: settings.agent.id, stateDir: settings.stateDir, dryRun, removed: [], kept: [] };
      // --json: one object on stdout at the end; otherwise a line per session as it goes.
      const say = (line: string) => {
        if (!options.json) process.stdout.write(`${line}\n`);
      };
      const wakePath = wakeStorePath(settings.stateDir);
      if (!settings.store && !existsSync(settings.journalPath) && !existsSync(wakePath) && !existsSync(acpSessionsRoot(settings.stateDir))) {
        say(`Nothing to clean: ${settings.agent.name} has no sessions in ${settings.stateDir}.`);
        if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const where = settings.store ? redactUrl(settings.store) : settings.stateDir;
      // On SQLite, opened only if they exist: cleaning up never creates a store.
      const { journal, wakes }: { journal: JournalStore | undefined; wakes: WakeStore | undefined } = settings.store
        ? await (await import('../../../store/postgres-stores.ts')).openPostgresStores(settings.store, settings.storeScope)
        : {
            journal: existsSync(settings.journalPath) ? new SqliteJournalStore(new Journal(settings.journalPath)) : undefined,
            wakes: existsSync(wakePath) ? new SqliteWakeStore(wakePath) : undefined,
          };
      try {
        const known = new Map(((await journal?.listSessions()) ?? []).map((s) => [s.id, Date.parse(s.updatedAt)]));
        for (const s of (await wakes?.sessions()) ?? []) {
          const last = s.lastEventAt ? Date.parse(s.lastEventAt) : 0;
          known.set(s.sessionId, Math.max(known.get(s.sessionId) ?? 0, last));
        }
        for (const kept of keptAcpSessions(settings.stateDir)) {
          known.set(kept.sessionId, Math.max(known.get(kept.sessionId) ?? 0, kept.lastUsed));
        }
        let targets: string[];
        if (sessionId !== undefined) {
          if (!known.has(sessionId)) throw new CliExit('failed', `acx cleanup: ${settings.agent.name} has no session "${sessionId}" in ${where}.`);
          targets = [sessionId];
        } else {
          const cutoff = Date.now() - idleDays! * 86_400_000;
          targets = [...known].filter(([, last]) => last < cutoff).map(([id]) => id);
        }
        for (const id of targets) {
          const busy = await busyReason(journal, wakes, id, sessionId === undefined);
          if (busy) {
            if (sessionId !== undefined) throw new CliExit('failed', `acx cleanup: session "${id}" ${busy}; nothing was removed.`);
            report.kept.push({ id, reason: busy });
            say(`kept ${id}: ${busy}`);
            continue;
          }
          const messages = (await journal?.messages(id))?.length ?? 0;
          const events = (await wakes?.items(id))?.length ?? 0;
          const acpDirs = acpSessionDirs(settings.stateDir, id);
          if (!dryRun) {
            await journal?.deleteSession(id);
            await wakes?.deleteSession(id);
            for (const dir of acpDirs) rmSync(dir, { recursive: true, force: true });
          }
          report.removed.push({ id, messages, wakeEvents: events, acpSessions: acpDirs.length });
          const acp = acpDirs.length > 0 ? `, ${acpDirs.length} ACP agent session${acpDirs.length > 1 ? 's' : ''}` : '';
          say(`${dryRun ? 'would remove' : 'removed'} ${id} (${messages} messages, ${events} wake events${acp})`);
        }
        if (targets.length === 0) say(`No session has been idle for ${idleDays} days.`);
        else if (report.removed.length > 0 && !dryRun) logger.info('cleanup', { agent: settings.agent.id, removed: report.removed.length });
        if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
      } finally {
        await wakes?.close();
        await journal?.close();
      }
    });
}

/** What cleanup needs of an agent's settings, for a library app's journal in the state home. */
function libraryHome(home: string | undefined): { agent: Pick<ResolvedSettings['agent'], 'id' | 'name'> } & Pick<ResolvedSettings, 'stateDir' | 'journalPath' | 'storeScope'> & { store?: undefined } {
  const stateHome = resolveStateHome(home);
  const stateDir = libraryStateDir(stateHome);
  if (!stateDir) {
    throw new CliExit('usage', `acx cleanup: name the agent whose sessions to clean (${stateHome} holds no library journal, journal.db).`);
  }
  return { agent: { id: LIBRARY_AGENT, name: LIBRARY_AGENT }, stateDir, journalPath: join(stateDir, 'journal.db'), storeScope: LIBRARY_AGENT };
}

/** `acx cleanup --json`: under --dry-run, `removed` lists what would be removed. */
interface CleanupReport {
  agent: string;
  stateDir: string;
  dryRun: boolean;
  removed: Array<{ id: string; messages: number; wakeEvents: number; acpSessions: number }>;
  kept: Array<{ id: string; reason: string }>;
}

/** ACP sessions kept for reopening (`--harness … --session`), by the directory each lives in. */
function keptAcpSessions(stateDir: string): Array<{ sessionId: string; lastUsed: number }> {
  const root = acpSessionsRoot(stateDir);
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((harness) =>
    readdirSync(join(root, harness)).map((sessionId) => {
      const record = join(root, harness, sessionId, 'acp-session.json');
      return { sessionId, lastUsed: statSync(existsSync(record) ? record : join(root, harness, sessionId)).mtimeMs };
    }),
  );
}

function acpSessionDirs(stateDir: string, sessionId: string): string[] {
  const root = acpSessionsRoot(stateDir);
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((harness) => join(root, harness, sessionDirName(sessionId)))
    .filter((dir) => existsSync(dir));
}

/** Why a session must stay, or undefined when it may go. */
async function busyReason(journal: JournalStore | undefined, wakes: WakeStore | undefined, sessionId: string, sweeping: boolean): Promise<string | undefined> {
  const holder = await wakes?.liveLeaseHolder(sessionId);
  if (holder) return `is being answered by a live wake (pid ${holder.pid})`;
  if (!sweeping) return undefined;
  if (await journal?.unfinishedTurn(sessionId)) return 'has an unfinished turn a later wake would finish';
  if (await wakes?.nextPending(sessionId)) return 'has pending wake events';
  return undefined;
}
