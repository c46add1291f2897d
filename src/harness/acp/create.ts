import type { AgentConfig, Harness, HarnessSession, OpenSessionOptions } from '../harness.ts';
import { silentLogger } from '../../util/logger.ts';
import { DEFAULT_CLIENT_APP } from './client-app.ts';
import { bootstrap, type BootstrapResult, defaultCacheDir } from './bootstrap.ts';
import { createLocalSandbox } from './sandbox.ts';
import { type ACPHarnessSession, openACPSession } from './session.ts';
import { type ACPSettings, validateSettings } from './settings.ts';
import { HARNESS_ATTRIBUTE, TurnJournal } from './turn-journal.ts';
import { Journal } from '../../store/journal.ts';
import { type JournalStore, SqliteJournalStore } from '../../store/journal-store.ts';
import { openJournalStore } from '../../store/open-journal.ts';

/**
 * `createACP(settings)`: a Harness that drives any ACP v1 coding agent. Settings are validated
 * here, before any work; the implementation is bootstrapped once per recipe (cached under the
 * acx cache dir) and every session gets its own sandbox session and agent process.
 */

export { DEFAULT_CLIENT_APP };

export interface ACPHarness extends Harness {
  readonly settings: Readonly<ACPSettings>;
  /** Installs (or reuses) the implementation without opening a session. */
  bootstrap(): Promise<BootstrapResult>;
  openSession(config: AgentConfig, options: OpenSessionOptions): Promise<ACPHarnessSession>;
}

export function createACP(settings: ACPSettings): ACPHarness {
  validateSettings(settings);
  const frozen: ACPSettings = { ...settings };
  const logger = settings.logger ?? silentLogger;
  const sandbox = settings.sandbox ?? createLocalSandbox();
  const clientApp = settings.clientApp ?? DEFAULT_CLIENT_APP;
  let installing: Promise<BootstrapResult> | undefined;
  const ensureBootstrap = () => {
    installing ??= bootstrap(frozen, {
      cacheDir: settings.cacheDir ?? defaultCacheDir(settings.hostEnv ?? process.env),
      progress: settings.progress === undefined ? process.stderr : settings.progress,
    }).catch((error: unknown) => {
      installing = undefined; // a failed install may be retried by the next session
      throw error;
    });
    return installing;
  };
  const open = new Set<HarnessSession>();
  // The sessions' turns are journaled: where the settings say (durable), else in this process's memory.
  const durable = settings.journal !== undefined;
  let journal: JournalStore | undefined;
  const openJournal = (): JournalStore =>
    (journal ??=
      typeof settings.journal === 'object'
        ? settings.journal
        : typeof settings.journal === 'string'
          ? openJournalStore(/^postgres(ql)?:\/\//.test(settings.journal) ? { store: settings.journal } : { journalPath: settings.journal })
          : new SqliteJournalStore(new Journal(':memory:')));
  const id = `acp:${settings.harnessId}`;

  return {
    id,
    settings: frozen,
    builtinToolNames: Object.keys(settings.builtinTools ?? {}),
    bootstrap: ensureBootstrap,
    async openSession(config: AgentConfig, { sessionId, explicitResume }): Promise<ACPHarnessSession> {
      const installed = await ensureBootstrap();
      const sandboxSession = await sandbox.createSession({ harnessId: settings.harnessId, sessionId });
      const session = await openACPSession({
        settings: frozen,
        config,
        sessionId,
        explicitResume: explicitResume === true,
        bootstrap: installed,
        sandbox: sandboxSession,
        hostEnv: settings.hostEnv ?? process.env,
        supportsRequestTransformations: sandbox.supportsRequestTransformations,
        clientApp,
        logger,
        journal: { store: openJournal(), durable },
      });
      open.add(session);
      const forget = <T>(fn: () => Promise<T>) => async () => {
        open.delete(session);
        return fn();
      };
      // Not a copy: the session's getters (canSuspend) must stay live.
      session.detach = forget(session.detach);
      session.destroy = forget(session.destroy);
      return session;
    },
    ...(durable
      ? {
          hasSession: (sessionId: string) => openJournal().hasSession(sessionId),
          /** This harness's sessions with a turn paused for its caller, from the journal (any process may answer them). */
          async listSuspended() {
            const store = openJournal();
            const listed = [];
            for (const turn of await store.suspendedTurns()) {
              if ((await store.sessionAttribute(turn.sessionId, HARNESS_ATTRIBUTE)) !== id) continue;
              const continuation = await new TurnJournal(store, turn.sessionId, { durable }).continuation(turn);
              listed.push({ sessionId: turn.sessionId, startedAt: turn.startedAt, ...continuation });
            }
            return listed;
          },
        }
      : {}),
    async close() {
      await Promise.allSettled([...open].map((s) => s.detach()));
      open.clear();
      await journal?.close();
      journal = undefined;
    },
  };
}
