import type { LanguageModelV4 } from '@ai-sdk/provider';
import { Engine, type EngineOptions, pendingOf, suspendReasonOf } from '../engine/engine.ts';
import { SessionPrompts } from '../engine/provider-prompt.ts';
import { fromLanguageModel, type ResolvedModel, resolveModel } from '../model/providers.ts';
import type { TurnRecord } from '../store/journal.ts';
import type { JournalStore } from '../store/journal-store.ts';
import { openJournalStore, sqliteJournalPath } from '../store/open-journal.ts';
import { DEFAULT_AGENT_ID, storeKindOf } from '../store/store-url.ts';
import { holdSession, type SessionLeaseSettings } from './session-lease.ts';
import { forkSession, rewindSession } from './session-branch.ts';
import { streamsPathBeside } from './turn-streams.ts';
import { openTurnStreamStore, type TurnStreamStore } from '../store/turn-streams.ts';
import { silentLogger } from '../util/logger.ts';
import type { AgentConfig, Harness, HarnessSession } from './harness.ts';
import { HARNESS_ATTRIBUTE, type TurnContinuation } from './session-state.ts';

/**
 * acx's own harness: the native engine over any AI SDK model, journaled in SQLite.
 */
/** Engine settings a harness passes through unchanged to every session's engine. */
type EngineTuning = Pick<
  EngineOptions,
  'maxSteps' | 'contextTokens' | 'params' | 'retries' | 'retryBaseMs' | 'memory' | 'logger' | 'clock' | 'checkpoint' | 'briefLines' | 'stepResultBudget' | 'builtins' | 'telemetry'
>;

export interface EngineHarnessOptions extends EngineTuning {
  /**
   * Warn when the context budget leaves too little headroom for one turn (default true): once,
   * at the harness's first session — the numbers are the same for every session it opens.
   */
  warnHeadroom?: boolean;
  /** An AI SDK LanguageModel, a resolved model, or a `provider:model-id` spec. */
  model: LanguageModelV4 | ResolvedModel | string;
  /** Directory for the journal (`journal.db`); or give `journalPath` directly. */
  home?: string;
  journalPath?: string;
  /**
   * Where the journal lives instead of the SQLite file: a `postgres://` URL (sessions served from
   * any host), or a JournalStore of your own. The harness closes it on close().
   */
  store?: string | JournalStore;
  /**
   * With `store` a postgres:// URL: the agent whose sessions this harness keeps there. A database
   * is shared by many agents and each sees only its own sessions, so two agents may both have a
   * session "s1". The CLI passes the agent's id (its state directory's name on SQLite); default
   * 'default', which is also where sessions written before agents were told apart are found.
   * The journal alone moves with `store`: memory is the `memory` provider given, if any — on
   * PostgreSQL, `createSqliteMemoryProvider({ records: () => new PostgresMemoryRecords(url, agentId) })`
   * from `acx/memory`.
   */
  agentId?: string;
  /** On a store shared by replicas (PostgreSQL): how a second call on a busy session waits (see SessionLeaseSettings). */
  sessionLease?: SessionLeaseSettings;
}

/** Where the journal's turn streams go: its PostgreSQL database, or streams.db beside its SQLite file; none beside a store of your own. */
function turnStreamsBeside(options: Pick<EngineHarnessOptions, 'store' | 'home' | 'journalPath'>): string | undefined {
  if (typeof options.store === 'object') return undefined;
  if (options.store !== undefined && storeKindOf(options.store) === 'postgres') return options.store;
  return streamsPathBeside(sqliteJournalPath(options));
}

/** A journaled unfinished turn as a continuation: paused turns say what they wait for; a running one was interrupted. */
async function continuationOf(journal: JournalStore, turn: TurnRecord | undefined): Promise<TurnContinuation | undefined> {
  if (!turn) return undefined;
  const pending = pendingOf(await journal.openCalls(turn.id));
  return { turnId: turn.id, suspendedBy: turn.status === 'suspended' ? suspendReasonOf(pending) : 'interrupted', ...pending };
}

function isResolved(model: EngineHarnessOptions['model']): model is ResolvedModel {
  return typeof model === 'object' && 'cacheMode' in model && 'model' in model;
}

export function createEngineHarness(options: EngineHarnessOptions): Harness & { readonly journal: JournalStore } {
  let model: Promise<ResolvedModel> | undefined;
  const resolve = () =>
    (model ??=
      typeof options.model === 'string'
        ? resolveModel({ spec: options.model })
        : Promise.resolve(isResolved(options.model) ? options.model : fromLanguageModel(options.model)));
  let journal: JournalStore | undefined;
  const openJournal = () => (journal ??= openJournalStore(options));
  let streams: Promise<TurnStreamStore> | undefined;
  let headroomChecked = options.warnHeadroom === false;
  // One memo of provider prompts for every engine this harness makes (one per session opened).
  const prompts = new SessionPrompts(16);

  return {
    id: 'engine',
    get journal() {
      return openJournal();
    },
    async openSession(config: AgentConfig, { sessionId }): Promise<HarnessSession> {
      const { model: _model, home: _home, journalPath: _journalPath, store: _store, agentId: _agentId, sessionLease: _sessionLease, warnHeadroom: _warnHeadroom, ...tuning } = options;
      const engine = new Engine({
        ...tuning,
        warnHeadroom: !headroomChecked,
        model: await resolve(),
        journal: openJournal(),
        prompts,
        agentId: config.agentId,
        instructions: config.instructions,
        tools: config.tools,
        speech: config.speech,
        permissionMode: config.permissionMode,
        output: config.output,
        guards: config.guards,
        logger: options.logger ?? silentLogger,
      });
      headroomChecked = true;
      await engine.journal.ensureSession(sessionId);
      return {
        id: sessionId,
        hasUnfinishedTurn: () => engine.hasUnfinishedTurn(sessionId),
        run: (input) => engine.runTurn({ sessionId, ...input }),
        continue: (input) => engine.continueTurn({ sessionId, ...input }),
        detach: async () => {},
        destroy: async () => {
          await engine.journal.deleteSession(sessionId);
          if (streams) await (await streams).deleteSession(sessionId);
        },
        canSuspend: true,
        abandonTurn: (turnId, reason) => engine.abandonTurn(sessionId, turnId, reason),
        ...(engine.journal.leases ? { exclusive: <T>(fn: (leaseLost: AbortSignal) => Promise<T>) => holdSession(engine.journal.leases!, sessionId, options.sessionLease ?? {}, options.logger ?? silentLogger, fn) } : {}),
        continuation: async () => continuationOf(engine.journal, await engine.journal.unfinishedTurn(sessionId)),
        history: async () => ({
          messages: await engine.journal.messages(sessionId),
          calls: (await Promise.all((await engine.journal.turns(sessionId)).map((turn) => engine.journal.calls(turn.id)))).flat(),
        }),
        fork: (forkOptions) => forkSession(engine.journal, sessionId, forkOptions),
        rewind: (rewindOptions) => rewindSession(engine.journal, sessionId, rewindOptions),
        compact: async ({ abortSignal }) => {
          const outcome = await engine.compactNow(sessionId, { abortSignal });
          return 'trigger' in outcome ? { compacted: true, ...outcome } : outcome;
        },
      };
    },
    hasSession: (sessionId) => openJournal().hasSession(sessionId),
    async listSuspended() {
      const journal = openJournal();
      const turns = [];
      // A journal shared with an ACP harness holds its sessions too: those are its to list.
      for (const turn of await journal.suspendedTurns()) if ((await journal.sessionAttribute(turn.sessionId, HARNESS_ATTRIBUTE)) === undefined) turns.push(turn);
      return Promise.all(turns.map(async (turn) => ({ sessionId: turn.sessionId, startedAt: turn.startedAt, ...(await continuationOf(journal, turn))! })));
    },
    turnStreams() {
      if (streams) return streams;
      const location = turnStreamsBeside(options);
      return location === undefined ? undefined : (streams = openTurnStreamStore(location, { agentId: options.agentId ?? DEFAULT_AGENT_ID }));
    },
    async close() {
      await journal?.close();
      journal = undefined;
      const opened = streams;
      streams = undefined;
      if (opened) await (await opened).close();
    },
  };
}
