import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { JournalStore } from '../../store/journal-store.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { processExists } from '../../util/process-exists.ts';

/**
 * Which process drives a session's ACP turn — runs it, or keeps its agent waiting with a request
 * open — kept in the journal as a session attribute, so another process knows whether it may
 * start an agent on the session: two agent processes on one agent session would each write its
 * history. The holder renews its record while it holds the turn and clears it when it lets go.
 * A record is live while its holder is: on this host, while its process exists (a killed holder
 * is gone at once); from another host, until it has not been renewed for RECORD_TTL_MS (hosts'
 * clocks need only roughly agree, so the TTL is generous).
 */

const ATTRIBUTE = 'acp.driver';
export const RECORD_TTL_MS = 60_000;
const RENEW_EVERY_MS = RECORD_TTL_MS / 4;
const HOST = hostname();

interface DriverRecord {
  id: string;
  host: string;
  pid: number;
  turnId: string;
  renewedAt: number;
}

export class TurnDriver {
  /** This session object's identity as a driver. */
  readonly id = randomUUID();
  private renewal: NodeJS.Timeout | undefined;
  private readonly journal: JournalStore;
  private readonly sessionId: string;
  private readonly log: Logger;

  constructor(journal: JournalStore, sessionId: string, log: Logger) {
    this.journal = journal;
    this.sessionId = sessionId;
    this.log = log;
  }

  /** Records this process as the driver of `turnId`, renewed until release(). */
  async hold(turnId: string): Promise<void> {
    const write = () => this.journal.setSessionAttribute(this.sessionId, ATTRIBUTE, JSON.stringify({ id: this.id, host: HOST, pid: process.pid, turnId, renewedAt: Date.now() } satisfies DriverRecord));
    await write();
    clearInterval(this.renewal);
    this.renewal = setInterval(() => void write().catch((error: unknown) => this.log.warn('acp driver record not renewed', { reason: errorMessage(error) })), RENEW_EVERY_MS);
    this.renewal.unref();
  }

  /** Clears the record if it is still this process's. */
  async release(): Promise<void> {
    clearInterval(this.renewal);
    this.renewal = undefined;
    const record = await this.read();
    if (record?.id === this.id) await this.journal.setSessionAttribute(this.sessionId, ATTRIBUTE, '');
  }

  /** The live driver of the session when it is another session object than this one (in any process). */
  async elsewhere(): Promise<{ turnId: string } | undefined> {
    const record = await this.read();
    return record && record.id !== this.id && isLive(record) ? { turnId: record.turnId } : undefined;
  }

  private async read(): Promise<DriverRecord | undefined> {
    const value = await this.journal.sessionAttribute(this.sessionId, ATTRIBUTE);
    if (!value) return undefined;
    try {
      return JSON.parse(value) as DriverRecord;
    } catch {
      return undefined;
    }
  }
}

function isLive(record: DriverRecord): boolean {
  const age = Date.now() - record.renewedAt;
  // On this host the process tells; a record left unrenewed far longer than any stall names a reused pid.
  if (record.host === HOST) return processExists(record.pid) && age < 10 * RECORD_TTL_MS;
  return age < RECORD_TTL_MS;
}
