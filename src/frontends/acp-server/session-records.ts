import type * as acp from '@agentclientprotocol/sdk';
import { isReasoningEffort, type ReasoningEffort } from '../../model/reasoning.ts';
import type { JournalStore } from '../../store/journal-store.ts';
import type { StoredMessage } from '../../store/journal.ts';
import { editKeysOf } from './edits.ts';
import { isPermissionMode, type PermissionMode } from '../../tools/permission.ts';

/**
 * What `acx acp` keeps about each ACP session in the journal, beside the engine's messages: its
 * cwd (which also marks a journal session as one an ACP client opened, so `session/list` leaves
 * out `acx run` sessions and sub-agents), its permission mode, model and thinking level (so they
 * survive `session/load` and `session/resume`), its title, and the old text of each file write (so
 * `session/load` shows the write's diff again). One ACP session is one journal session.
 */
const ATTRIBUTE = { cwd: 'acp.cwd', mode: 'acp.mode', model: 'acp.model', effort: 'acp.effort', title: 'acp.title' } as const;
/** A write's old text, by its edit key (edits.ts): `{"oldText": string | null}`. */
const EDIT_PREFIX = 'acp.edit.';

export class SessionRecords {
  private readonly journal: JournalStore;

  constructor(journal: JournalStore) {
    this.journal = journal;
  }

  async exists(sessionId: string): Promise<boolean> {
    return this.journal.hasSession(sessionId);
  }

  async cwd(sessionId: string): Promise<string | undefined> {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.cwd);
  }

  async setCwd(sessionId: string, cwd: string): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, ATTRIBUTE.cwd, cwd);
  }

  /** The kept mode; one the journal holds that acx no longer knows is ignored. */
  async mode(sessionId: string): Promise<PermissionMode | undefined> {
    const kept = await this.journal.sessionAttribute(sessionId, ATTRIBUTE.mode);
    return kept !== undefined && isPermissionMode(kept) ? kept : undefined;
  }

  async setMode(sessionId: string, mode: PermissionMode): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, ATTRIBUTE.mode, mode);
  }

  async model(sessionId: string): Promise<string | undefined> {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.model);
  }

  async setModel(sessionId: string, model: string): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, ATTRIBUTE.model, model);
  }

  /** The kept reasoning effort; undefined when none was chosen (or the kept one is not a level acx knows). */
  async effort(sessionId: string): Promise<ReasoningEffort | undefined> {
    const kept = await this.journal.sessionAttribute(sessionId, ATTRIBUTE.effort);
    return isReasoningEffort(kept) ? kept : undefined;
  }

  /** Keeps the chosen effort; undefined keeps "as configured". */
  async setEffort(sessionId: string, effort: ReasoningEffort | undefined): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, ATTRIBUTE.effort, effort ?? '');
  }

  /** Keeps the text a write replaced (null: it made the file). */
  async keepEdit(sessionId: string, key: string, oldText: string | null): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, EDIT_PREFIX + key, JSON.stringify({ oldText }));
  }

  /** The old texts kept for the writes these messages call, by edit key (writes with none kept are absent). */
  async keptEdits(sessionId: string, messages: readonly StoredMessage[]): Promise<Map<string, string | null>> {
    const kept = new Map<string, string | null>();
    for (const key of messages.flatMap((stored) => editKeysOf(stored.message))) {
      const value = await this.journal.sessionAttribute(sessionId, EDIT_PREFIX + key);
      if (value === undefined) continue;
      const { oldText } = JSON.parse(value) as { oldText: string | null };
      kept.set(key, oldText);
    }
    return kept;
  }

  async title(sessionId: string): Promise<string | undefined> {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.title);
  }

  async setTitle(sessionId: string, title: string): Promise<void> {
    await this.journal.setSessionAttribute(sessionId, ATTRIBUTE.title, title);
  }

  async updatedAt(sessionId: string): Promise<string | undefined> {
    return (await this.journal.sessionsWithAttribute(ATTRIBUTE.cwd)).find((s) => s.id === sessionId)?.updatedAt;
  }

  /** The ACP sessions, most recently used first; only those in `cwd` when it is given. */
  async list(cwd?: string): Promise<acp.SessionInfo[]> {
    const sessions = (await this.journal.sessionsWithAttribute(ATTRIBUTE.cwd)).filter((s) => cwd === undefined || s.value === cwd);
    return Promise.all(
      sessions.map(async (s) => {
        const title = await this.title(s.id);
        return { sessionId: s.id, cwd: s.value, updatedAt: s.updatedAt, ...(title ? { title } : {}) };
      }),
    );
  }

  async delete(sessionId: string): Promise<void> {
    await this.journal.deleteSession(sessionId);
  }

  /**
   * A new session `to` in `cwd` with the history of `from`, its mode, model and thinking level and
   * the diffs of its writes (not its title: the fork is named by its own first prompt). The
   * messages of a turn `from` left unfinished are left out, so the fork starts where `from` last
   * finished. Nothing is left of `to` when the copy fails.
   */
  async fork(from: string, to: string, cwd: string): Promise<void> {
    const unfinished = await this.journal.unfinishedTurn(from);
    try {
      await this.setCwd(to, cwd);
      for (const name of [ATTRIBUTE.mode, ATTRIBUTE.model, ATTRIBUTE.effort]) {
        const value = await this.journal.sessionAttribute(from, name);
        if (value !== undefined) await this.journal.setSessionAttribute(to, name, value);
      }
      const copied = (await this.journal.messages(from)).filter((stored) => !unfinished || stored.turnId !== unfinished.id);
      for (const stored of copied) await this.journal.appendMessage(to, null, stored.kind, stored.message);
      for (const [key, oldText] of await this.keptEdits(from, copied)) await this.keepEdit(to, key, oldText);
    } catch (error) {
      await this.journal.deleteSession(to).catch(() => {});
      throw error;
    }
  }
}
