// The tool-call ledger: a call gets a row only once something is recorded of it; until then the
// committed assistant message naming it is the evidence, and openCalls reads it from there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, UNFINISHED_TURN_SQL } from '../../src/store/journal.ts';

let dir: string;
let journal: Journal;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-journal-'));
  journal = new Journal(join(dir, 'journal.db'));
  journal.ensureSession('s');
  journal.transaction(() => {
    journal.startTurn('t', 's');
    journal.appendMessage('s', 't', 'user', { role: 'user', content: 'go' });
  });
});
afterEach(() => {
  journal.close();
  rmSync(dir, { recursive: true, force: true });
});

const assistant = (...calls: Array<[id: string, tool: string, input: unknown]>): ModelMessage => ({
  role: 'assistant',
  content: calls.map(([toolCallId, toolName, input]) => ({ type: 'tool-call' as const, toolCallId, toolName, input })),
});
const ledgerRows = () => journal.db.prepare('SELECT call_id, status FROM tool_calls ORDER BY step, ordinal').all();

describe('journal tool-call ledger', () => {
  it('reads a step of calls nothing was recorded of from its assistant message, without ledger rows', () => {
    journal.appendMessage('s', 't', 'assistant', assistant(['a', 'fs_read', { path: 'x' }], ['b', 'fs_list', {}]));
    expect(ledgerRows()).toEqual([]);
    expect(journal.openCalls('t')).toEqual([
      { turnId: 't', step: 1, callId: 'a', ordinal: 0, toolName: 'fs_read', input: { path: 'x' }, status: 'pending', result: null, approval: null, decision: null },
      { turnId: 't', step: 1, callId: 'b', ordinal: 1, toolName: 'fs_list', input: {}, status: 'pending', result: null, approval: null, decision: null },
    ]);
  });

  it('records status, approval and result on one row each, keeping what was recorded before', () => {
    journal.appendMessage('s', 't', 'assistant', assistant(['a', 'send', { to: 'x' }], ['b', 'fs_read', {}]));
    const [a] = journal.openCalls('t');
    journal.recordApproval(a!, { approved: true });
    journal.setCallStatus(a!, 'started');
    journal.recordCallResult(a!, { type: 'text', value: 'sent' });
    const open = journal.openCalls('t');
    expect(open[0]).toMatchObject({ callId: 'a', status: 'done', result: { type: 'text', value: 'sent' }, approval: { approved: true } });
    expect(open[1]).toMatchObject({ callId: 'b', status: 'pending', ordinal: 1 });
    expect(ledgerRows()).toEqual([{ call_id: 'a', status: 'done' }]);
  });

  it("keeps a call's hook decision (and its rewritten input) through later status, approval and result writes", () => {
    journal.appendMessage('s', 't', 'assistant', assistant(['a', 'send', { to: 'x' }]));
    const [a] = journal.openCalls('t');
    journal.recordDecision(a!, { decision: 'allow', input: { to: 'y' } });
    journal.recordApproval(a!, { approved: true });
    journal.setCallStatus(a!, 'started');
    expect(journal.openCalls('t')[0]).toMatchObject({ status: 'started', input: { to: 'x' }, approval: { approved: true }, decision: { decision: 'allow', input: { to: 'y' } } });
    journal.recordCallResult(a!, { type: 'text', value: 'sent' });
    expect(journal.openCalls('t')[0]).toMatchObject({ status: 'done', decision: { decision: 'allow', input: { to: 'y' } } });
  });

  it('has no open calls once the step settled, and finds the next step by its place in the turn', () => {
    journal.appendMessage('s', 't', 'assistant', assistant(['a', 'send', {}]));
    const [a] = journal.openCalls('t');
    journal.setCallStatus(a!, 'started');
    journal.transaction(() => {
      journal.appendMessage('s', 't', 'tool', {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'send', output: { type: 'text', value: 'ok' } }],
      });
      journal.settleStep('t', 1);
    });
    expect(journal.openCalls('t')).toEqual([]);
    // Some models reuse call ids across steps: the second step's `a` is a different call.
    journal.appendMessage('s', 't', 'assistant', assistant(['a', 'send', { again: true }]));
    expect(journal.openCalls('t')).toMatchObject([{ step: 2, callId: 'a', status: 'pending', input: { again: true } }]);
  });

  it('a final answer without calls leaves nothing open', () => {
    journal.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'done' });
    expect(journal.openCalls('t')).toEqual([]);
  });
});

describe('session attributes', () => {
  it('keeps a named value per session (creating a new session), across a reopen, until the session is deleted', () => {
    journal.setSessionAttribute('fresh', 'acp.cwd', '/work/project');
    journal.setSessionAttribute('fresh', 'acp.cwd', '/work/other');
    expect(journal.hasSession('fresh')).toBe(true);
    expect(journal.sessionAttribute('fresh', 'acp.cwd')).toBe('/work/other');
    expect(journal.sessionAttribute('s', 'acp.cwd')).toBeUndefined();
    journal.close();
    journal = new Journal(join(dir, 'journal.db'));
    expect(journal.sessionAttribute('fresh', 'acp.cwd')).toBe('/work/other');
    journal.deleteSession('fresh');
    expect(journal.sessionAttribute('fresh', 'acp.cwd')).toBeUndefined();
  });

  it('clears a session\'s history and keeps the session with its attributes', () => {
    journal.setSessionAttribute('s', 'acp.mode', 'allow-reads');
    journal.appendMessage('s', null, 'user', { role: 'user', content: 'hello' });
    journal.clearHistory('s');
    expect(journal.messages('s')).toEqual([]);
    expect(journal.hasSession('s')).toBe(true);
    expect(journal.sessionAttribute('s', 'acp.mode')).toBe('allow-reads');
  });

  it('lists only the sessions that carry an attribute, with its value', () => {
    journal.setSessionAttribute('opened-by-editor', 'acp.cwd', '/work/project');
    journal.ensureSession('run-only');
    journal.setSessionAttribute('run-only', 'other', 'x');
    const listed = journal.sessionsWithAttribute('acp.cwd');
    expect(listed.map((s) => [s.id, s.value])).toEqual([['opened-by-editor', '/work/project']]);
    expect(Date.parse(listed[0]!.updatedAt)).not.toBeNaN();
  });
});

describe('unfinished turns', () => {
  it("finds a session's unfinished turn among its unfinished turns only (an index), not by walking every turn it finished", () => {
    for (let i = 0; i < 3; i++) {
      journal.startTurn(`done-${i}`, 's');
      journal.updateTurn(`done-${i}`, { status: 'done' });
    }
    expect(journal.unfinishedTurn('s')?.id).toBe('t');
    journal.updateTurn('t', { status: 'done' });
    expect(journal.unfinishedTurn('s')).toBeUndefined();
    // Asked before every turn: in a session of thousands of turns, a walk costs a read of each.
    const plan = journal.db
      .prepare(`EXPLAIN QUERY PLAN ${UNFINISHED_TURN_SQL}`)
      .all('s') as Array<{ detail: string }>;
    expect(plan.map((row) => row.detail).join('; ')).toMatch(/USING INDEX turns_unfinished/);
  });
});
