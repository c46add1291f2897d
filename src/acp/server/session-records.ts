import type * as acp from '@agentclientprotocol/sdk';
import type { Journal } from '../../store/journal.ts';
import { isPermissionMode, type PermissionMode } from '../../tools/permission.ts';

/**
 * What `acx acp` keeps about each ACP session in the journal, beside the engine's messages: its
 * cwd (which also marks a journal session as one an ACP client opened, so `session/list` leaves
 * out `acx run` sessions and sub-agents), its permission mode and model (so they survive
 * `session/load` and `session/resume`), and its title. One ACP session is one journal session.
 */
const ATTRIBUTE = { cwd: 'acp.cwd', mode: 'acp.mode', model: 'acp.model', title: 'acp.title' } as const;

export class SessionRecords {
  private readonly journal: Journal;

  constructor(journal: Journal) {
    this.journal = journal;
  }

  exists(sessionId: string): boolean {
    return this.journal.hasSession(sessionId);
  }

  cwd(sessionId: string): string | undefined {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.cwd);
  }

  setCwd(sessionId: string, cwd: string): void {
    this.journal.setSessionAttribute(sessionId, ATTRIBUTE.cwd, cwd);
  }

  /** The kept mode; one the journal holds that acx no longer knows is ignored. */
  mode(sessionId: string): PermissionMode | undefined {
    const kept = this.journal.sessionAttribute(sessionId, ATTRIBUTE.mode);
    return kept !== undefined && isPermissionMode(kept) ? kept : undefined;
  }

  setMode(sessionId: string, mode: PermissionMode): void {
    this.journal.setSessionAttribute(sessionId, ATTRIBUTE.mode, mode);
  }

  model(sessionId: string): string | undefined {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.model);
  }

  setModel(sessionId: string, model: string): void {
    this.journal.setSessionAttribute(sessionId, ATTRIBUTE.model, model);
  }

  title(sessionId: string): string | undefined {
    return this.journal.sessionAttribute(sessionId, ATTRIBUTE.title);
  }

  setTitle(sessionId: string, title: string): void {
    this.journal.setSessionAttribute(sessionId, ATTRIBUTE.title, title);
  }

  updatedAt(sessionId: string): string | undefined {
    return this.journal.sessionsWithAttribute(ATTRIBUTE.cwd).find((s) => s.id === sessionId)?.updatedAt;
  }

  /** The ACP sessions, most recently used first; only those in `cwd` when it is given. */
  list(cwd?: string): acp.SessionInfo[] {
    return this.journal
      .sessionsWithAttribute(ATTRIBUTE.cwd)
      .filter((s) => cwd === undefined || s.value === cwd)
      .map((s) => {
        const title = this.title(s.id);
        return { sessionId: s.id, cwd: s.value, updatedAt: s.updatedAt, ...(title ? { title } : {}) };
      });
  }

  delete(sessionId: string): void {
    this.journal.deleteSession(sessionId);
  }
}
