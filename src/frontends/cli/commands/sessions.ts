import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Command, Option } from 'commander';
import { cartridgeStateDir } from '../../../app/load-cartridge.ts';
import { agentStateDir, LIBRARY_AGENT, libraryStateDir, resolveStateHome } from '../../../app/paths.ts';
import { locateAgent, resolveStoreUrl } from '../../../app/settings.ts';
import { Journal } from '../../../store/journal.ts';
import { type JournalStore, SqliteJournalStore } from '../../../store/journal-store.ts';
import { redactUrl } from '../../../store/store-url.ts';
import { type SessionDetail, sessionDetail, type SessionSummary, summarizeSessions, transcriptLines } from '../../../store/session-report.ts';
import { wakeStorePath } from '../../../store/open-wake-store.ts';
import { SqliteWakeStore } from '../../../store/sqlite-wake-store.ts';
import type { WakeStore } from '../../../store/wake-store.ts';
import { AcxError } from '../../../core/errors.ts';
import { forkSession, rewindSession } from '../../../harness/session-branch.ts';
import { wholeNumberFlag } from '../run-options.ts';
import { allowPortableOption, configHomeOption, homeOption, jsonOption, registryOption, storeOption } from '../common-options.ts';

/**
 * `acx sessions [agent]` lists what agents did — every session in the journal the engine writes
 * (and wake mode's inbox beside it) with its turns, whether one is unfinished, and the wake
 * events still pending; `acx sessions show <id>` prints one session's transcript, tool calls
 * and results marked. Without an agent, every agent under the state home. Those two write
 * nothing; `acx sessions fork` and `acx sessions rewind` are session.fork() and session.rewind().
 */
interface StoreOptions {
  home?: string;
  configHome?: string;
  allowPortable?: boolean;
  registry?: string;
  store?: string;
  json?: boolean;
}

/**
 * Where sessions are read: one agent's state directory (its journal.db and wake.db, named by the
 * agent id or cartridge key), or that agent's rows on the PostgreSQL store every wake given that
 * --store shares (named by the agent id they are scoped by).
 */
interface AgentState {
  name: string;
  /** Shown to the user: the directory, or the store's URL without its password. */
  dir: string;
  storeUrl?: string;
}

function addStoreOptions(command: Command, json: string): Command {
  return command
    .addOption(homeOption())
    .addOption(configHomeOption())
    .addOption(allowPortableOption())
    .addOption(registryOption())
    .addOption(storeOption())
    .addOption(jsonOption(json));
}

export function register(program: Command): void {
  const sessions = addStoreOptions(
    program
      .command('sessions')
      .description('list the sessions an agent has (all agents when none is named): turns, unfinished turn, pending wake events')
      .argument('[agent]', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent; omit it for every agent in the state home (and a library app\'s journal in it)'),
    '{stateHome, sessions: [{agent, id, createdAt, lastActivityAt, turns, unfinishedTurn, pendingEvents}]}',
  ).action(async (agent: string | undefined, options: StoreOptions) => {
    const states = await statesOf(agent, options);
    const rows: Array<SessionSummary & { agent: string }> = [];
    for (const state of states) {
      rows.push(...(await withStores(state, async (journal, wakes) => (await summarizeSessions(journal, wakes)).map((s) => ({ agent: state.name, ...s })))));
    }
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ stateHome: resolveStateHome(options.home), sessions: rows }, null, 2)}\n`);
      return;
    }
    if (rows.length === 0) {
      const storeUrl = resolveStoreUrl(options);
      // On PostgreSQL the sessions are the store's, not the state home's: name what was read.
      const where = storeUrl ? `${redactUrl(storeUrl)}${agent === undefined ? '' : ` for agent ${states[0]!.name}`}` : agent === undefined ? resolveStateHome(options.home) : states[0]!.dir;
      process.stdout.write(`No sessions in ${where}.\n`);
      return;
    }
    process.stdout.write(sessionTable(rows));
  });

  addStoreOptions(
    sessions
      .command('show')
      .description("print a session's transcript: what was said, each tool call and its result")
      .argument('<id>', 'the session id (from acx sessions)')
      .argument('[agent]', 'the agent it belongs to (default whichever agent in the state home has it)'),
    '{agent, id, createdAt, lastActivityAt, turns, unfinishedTurn, pendingEvents, turnRecords, messages, events}',
  ).action(async (id: string, agent: string | undefined, _options: StoreOptions, command: Command) => {
    // `acx sessions --home H show ID` and `acx sessions show ID --home H` mean the same.
    const options = command.optsWithGlobals<StoreOptions>();
    const { state, detail } = await findSession(id, agent, options, 'show');
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ agent: state.name, ...detail }, null, 2)}\n`);
      return;
    }
    process.stdout.write(transcriptText(state.name, detail));
  });

  addStoreOptions(
    sessions
      .command('fork')
      .description("copy a session up to a turn into a new session; the original is left as it is")
      .argument('<id>', 'the session id (from acx sessions)')
      .argument('[agent]', 'the agent it belongs to (default whichever agent in the state home has it)')
      .addOption(new Option('--at-turn <n>', 'keep turns 1 to n, as acx sessions show numbers them (default every finished turn)').argParser(wholeNumberFlag(0))),
    '{agent, id, forkedFrom, turns}',
  ).action(async (id: string, agent: string | undefined, _options: StoreOptions, command: Command) => {
    const options = command.optsWithGlobals<StoreOptions & { atTurn?: string }>();
    const { state } = await findSession(id, agent, options, 'fork');
    const forked = await withStores(state, async (journal) => {
      const forkId = await forkSession(journal!, id, options.atTurn === undefined ? {} : { atTurn: Number(options.atTurn) });
      return { agent: state.name, id: forkId, forkedFrom: id, turns: (await journal!.turns(forkId)).length };
    });
    if (options.json) {
      process.stdout.write(`${JSON.stringify(forked, null, 2)}\n`);
      return;
    }
    process.stdout.write(`Forked session ${id} as ${forked.id} (${forked.turns} turn${forked.turns === 1 ? '' : 's'}).\n`);
  });

  addStoreOptions(
    sessions
      .command('rewind')
      .description("cut a session back to a turn, and with --files put back the files the agent's tools changed after it")
      .argument('<id>', 'the session id (from acx sessions)')
      .argument('[agent]', 'the agent it belongs to (default whichever agent in the state home has it)')
      .addOption(new Option('--to-turn <n>', 'keep turns 1 to n, as acx sessions show numbers them; 0 keeps none').argParser(wholeNumberFlag(0)).makeOptionMandatory())
      .addOption(new Option('--files', "also restore the workspace files fs_write and execute changed after that turn; refused, changing nothing, when someone else changed one since")),
    '{agent, id, toTurn, turnsRemoved, files: [{path, action}]}',
  ).action(async (id: string, agent: string | undefined, _options: StoreOptions, command: Command) => {
    const options = command.optsWithGlobals<StoreOptions & { toTurn: string; files?: boolean }>();
    const { state } = await findSession(id, agent, options, 'rewind');
    const toTurn = Number(options.toTurn);
    const result = await withStores(state, (journal) => rewindSession(journal!, id, { toTurn, files: options.files === true }));
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ agent: state.name, id, toTurn, ...result }, null, 2)}\n`);
      return;
    }
    const lines = [`Rewound session ${id} to turn ${toTurn}: ${result.turnsRemoved} turn${result.turnsRemoved === 1 ? '' : 's'} removed.`];
    for (const file of result.files) lines.push(`  ${file.action} ${file.path}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  });
}

/** The one agent state that has session `id` (refused when none or several do), with the session's detail. */
async function findSession(id: string, agent: string | undefined, options: StoreOptions, subcommand: string): Promise<{ state: AgentState; detail: SessionDetail }> {
  const states = await statesOf(agent, options);
  const found: Array<{ state: AgentState; detail: SessionDetail }> = [];
  for (const state of states) {
    const detail = await withStores(state, (journal, wakes) => sessionDetail(id, journal, wakes));
    if (detail) found.push({ state, detail });
  }
  if (found.length === 0) {
    throw new AcxError('session-not-found', `No session "${id}" in ${agent === undefined ? resolveStateHome(options.home) : states[0]!.dir}.`, {
      hint: 'List the sessions with `acx sessions` (add the agent, and --home if you ran it with one).',
    });
  }
  if (found.length > 1) {
    throw new AcxError('usage', `Several agents have a session "${id}": ${found.map((f) => f.state.name).join(', ')}.`, {
      hint: `Name the agent: acx sessions ${subcommand} ${id} <agent>.`,
    });
  }
  return found[0]!;
}

/** What to read: the agent (or every agent) on the PostgreSQL store when --store / ACX_STORE names one, else under the state home. */
async function statesOf(agent: string | undefined, options: StoreOptions): Promise<AgentState[]> {
  const storeUrl = resolveStoreUrl(options);
  if (storeUrl) {
    const ids = agent === undefined ? await (await import('../../../store/postgres-stores.ts')).postgresAgentIds(storeUrl) : [(await locateAgent({ agent, ...options })).storeScope];
    return ids.map((id) => ({ name: id, dir: redactUrl(storeUrl), storeUrl }));
  }
  return agent === undefined ? allAgentStates(options) : [await agentState(agent, options)];
}

async function agentState(agent: string, options: StoreOptions): Promise<AgentState> {
  const located = await locateAgent({ agent, ...options });
  return { name: basename(located.stateDir), dir: located.stateDir };
}

/** Every agent and cartridge that has state under the state home, and a library app's journal in it. */
function allAgentStates(options: StoreOptions): AgentState[] {
  const home = resolveStateHome(options.home);
  const library = libraryStateDir(home);
  const agents = [dirname(agentStateDir(home, 'x')), dirname(cartridgeStateDir(home, 'x'))].flatMap((root) =>
    existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => ({ name: entry.name, dir: join(root, entry.name) }))
          .sort((a, b) => a.name.localeCompare(b.name))
      : [],
  );
  return [...(library ? [{ name: LIBRARY_AGENT, dir: library }] : []), ...agents];
}

/** Opens the agent's stores that exist (reading never creates one) for the time of `read`. */
async function withStores<T>(state: AgentState, read: (journal: JournalStore | undefined, wakes: WakeStore | undefined) => Promise<T>): Promise<T> {
  const { journal, wakes } = state.storeUrl ? await (await import('../../../store/postgres-stores.ts')).openPostgresStores(state.storeUrl, state.name) : openSqliteStores(state.dir);
  try {
    return await read(journal, wakes);
  } finally {
    await wakes?.close();
    await journal?.close();
  }
}

function openSqliteStores(dir: string): { journal: JournalStore | undefined; wakes: WakeStore | undefined } {
  const journalPath = join(dir, 'journal.db');
  const wakePath = wakeStorePath(dir);
  return {
    journal: existsSync(journalPath) ? new SqliteJournalStore(new Journal(journalPath)) : undefined,
    wakes: existsSync(wakePath) ? new SqliteWakeStore(wakePath) : undefined,
  };
}

/** A stored timestamp as a person reads it: to the second, in UTC. */
function when(iso: string): string {
  return iso ? iso.replace(/\.\d+Z$/, 'Z') : '-';
}

function sessionTable(rows: Array<SessionSummary & { agent: string }>): string {
  const header = ['SESSION', 'AGENT', 'CREATED', 'LAST ACTIVITY', 'TURNS', 'UNFINISHED', 'PENDING EVENTS'];
  const cells = rows.map((r) => [r.id, r.agent, when(r.createdAt), when(r.lastActivityAt), String(r.turns), r.unfinishedTurn ? 'yes' : 'no', String(r.pendingEvents)]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  return `${[line(header), ...cells.map(line)].join('\n')}\n`;
}

const MAX_CALL_CHARS = 300;
const MAX_RESULT_CHARS = 500;

function clip(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * The transcript as text: a header line per turn, what the user and the agent said, and each
 * tool call (→) and result (← or ✗ when it failed), long inputs and results clipped.
 */
export function transcriptText(agent: string, detail: SessionDetail): string {
  const out: string[] = [
    `Session ${detail.id} (agent ${agent})`,
    `created ${when(detail.createdAt)}, last activity ${when(detail.lastActivityAt)}; ${detail.turns} turn${detail.turns === 1 ? '' : 's'}` +
      `, ${detail.unfinishedTurn ? 'one unfinished' : 'none unfinished'}; ${detail.pendingEvents} pending wake event${detail.pendingEvents === 1 ? '' : 's'}`,
  ];
  const turnNumber = new Map(detail.turnRecords.map((t, i) => [t.id, i + 1]));
  let currentTurn: string | null | undefined;
  for (const stored of detail.messages) {
    if (stored.turnId !== currentTurn && stored.turnId !== null) {
      const turn = detail.turnRecords.find((t) => t.id === stored.turnId);
      const status = turn ? (turn.status === 'failed' && turn.error ? `failed: ${turn.error.replace(/^\[turn failed: |\]$/g, '')}` : turn.status) : 'unknown';
      out.push('', `── turn ${turnNumber.get(stored.turnId) ?? '?'}: ${status}${turn ? `, ${turn.steps} step${turn.steps === 1 ? '' : 's'}, started ${when(turn.startedAt)}` : ''}`);
    }
    currentTurn = stored.turnId;
    for (const line of transcriptLines(stored)) {
      switch (line.kind) {
        case 'user':
          out.push(`user> ${line.text}`);
          break;
        case 'agent':
          out.push(`agent> ${line.text}`);
          break;
        case 'summary':
          out.push(`[summary of earlier turns] ${line.text}`);
          break;
        case 'note':
          out.push(`[note] ${line.text}`);
          break;
        case 'tool-call':
          out.push(`  → ${line.toolName} ${clip(JSON.stringify(line.input ?? null), MAX_CALL_CHARS)}`);
          break;
        case 'tool-result':
          out.push(`  ${line.isError ? '✗' : '←'} ${line.toolName}: ${clip(line.output, MAX_RESULT_CHARS)}`);
          break;
      }
    }
  }
  const pending = detail.events.filter((e) => e.state !== 'done');
  if (pending.length > 0) {
    out.push('', 'wake events not answered:');
    for (const e of pending) out.push(`  ${e.eventId} (${e.state}${e.attempts ? `, ${e.attempts} attempts` : ''})${e.sender ? ` from ${e.sender}` : ''}: ${clip(e.text, MAX_RESULT_CHARS)}`);
  }
  return `${out.join('\n')}\n`;
}
