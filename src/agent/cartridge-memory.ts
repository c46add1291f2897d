import { createHash } from 'node:crypto';
import { Cartridge } from '../cartridge/container.ts';
import { codebaseFingerprint, loadOrCreateSalt, repoIdentityOf } from '../cartridge/memory.ts';
import { withSaveZone } from '../cartridge/save.ts';
import { createSqliteMemoryProvider, type SqliteMemoryProvider } from '../memory/provider.ts';
import { MemoryInputError } from '../memory/keys.ts';
import type { MemoryStore, WriteOptions } from '../memory/store.ts';
import { createAddMemoryTool, createMemoryTools, createSearchMemoryTool } from '../tools/builtin/memory.ts';
import { errorMessage } from '../util/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import type { RomMemoryRecord } from './boot-cartridge.ts';

/**
 * Memory for a booted cartridge.
 *
 * - The searchable store is a local FTS index (the same SQLite memory store a directory agent
 *   uses) beside the cartridge in the state home. It is derived data: rebuilt from ROM and SAVE.
 * - ROM records are loaded under `rom/<id>` on every boot and are read-only: a write or delete
 *   of a `rom/` key is refused.
 * - Every deliberate write (memory_write, add_memory) also lands in the cartridge's SAVE zone as
 *   a field-learned record (`portable: false`, `cbf1_` codebase fingerprint from this
 *   installation's salt), so what the agent learns travels with the file. SAVE is append/merge
 *   only (SPEC §7.3): each distinct value of a key is its own record; on a new machine the
 *   newest value per key is loaded into the index.
 * - Observed exchanges and compaction summaries stay local, like the transcript journal.
 */
export const ROM_KEY_PREFIX = 'rom/';

export interface CartridgeMemoryOptions {
  cartridgePath: string;
  /** The local index file (memory.db in the cartridge's state directory). */
  indexPath: string;
  /** Per-installation salt for codebase fingerprints (created 0600 on first SAVE write). */
  saltPath: string;
  /** The codebase the agent works on (its workspace); a git identity when it is a repository. */
  codebaseDir: string;
  logger?: Logger;
  now?: () => Date;
}

export interface CartridgeMemoryProvider extends SqliteMemoryProvider {
  /** Loads ROM records (read-only) and SAVE records missing from the index. Call after activation. */
  load(rom: readonly RomMemoryRecord[]): { rom: number; save: number };
}

export function createCartridgeMemoryProvider(options: CartridgeMemoryOptions): CartridgeMemoryProvider {
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? (() => new Date());
  const inner = createSqliteMemoryProvider({ path: options.indexPath, logger, now });
  let fingerprint: string | undefined;
  const codebase = (): string => {
    if (fingerprint) return fingerprint;
    let identity: string;
    try {
      identity = repoIdentityOf(options.codebaseDir);
    } catch {
      identity = `local:${options.codebaseDir}`; // not a repository: the workspace itself
    }
    fingerprint = codebaseFingerprint(loadOrCreateSalt(options.saltPath), identity);
    return fingerprint;
  };

  const toSave = (entries: ReadonlyArray<{ key: string; value: string; tags?: string[] | undefined }>) => {
    const stamp = now().toISOString();
    withSaveZone(options.cartridgePath, (save) =>
      save.putMemory(
        entries.map((entry) => ({
          id: saveId(entry.key, entry.value),
          key: entry.key,
          portable: false,
          codebaseFingerprint: codebase(),
          title: entry.key,
          summary: entry.value,
          sourceType: 'field-learned',
          timestamp: stamp,
          tags: entry.tags ?? [],
        })),
      ),
    );
  };

  // The store the model's tools see: writes go to the index and to SAVE; ROM keys are read-only.
  let guarded: MemoryStore | undefined;
  const store = (): MemoryStore => {
    if (guarded) return guarded;
    const target = inner.store;
    guarded = new Proxy(target, {
      get(t, prop) {
        if (prop === 'write') {
          return (key: string, value: string, opts: WriteOptions = {}) => {
            assertWritable(key);
            const result = t.write(key, value, opts);
            toSave([{ key, value, tags: opts.tags }]);
            return result;
          };
        }
        if (prop === 'writeMany') {
          return (entries: Iterable<{ key: string; value: string } & WriteOptions>) => {
            const list = [...entries];
            list.forEach((e) => assertWritable(e.key));
            const count = t.writeMany(list);
            toSave(list);
            return count;
          };
        }
        if (prop === 'delete') {
          return (key: string) => {
            assertWritable(key);
            throw new MemoryInputError(
              `"${key}" cannot be deleted: a cartridge's memory is append-only (its SAVE zone merges records, never drops them).`,
              'Write a corrected value under the same key instead.',
            );
          };
        }
        const value = Reflect.get(t, prop, t) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value;
      },
    });
    return guarded;
  };

  return {
    name: 'sqlite',
    get store() {
      return store();
    },
    // memory_delete is left out: SAVE memory is append/merge-only.
    tools: () => createMemoryTools(store).filter((tool) => tool.name !== 'memory_delete'),
    roleTools: () => ({ 'acx:memory.write': createAddMemoryTool(store), 'acx:search': createSearchMemoryTool(store) }),
    observe: (exchange) => inner.observe(exchange),
    context: (scope) => inner.context(scope),
    remember: (key, value) => inner.remember(key, value),
    close: () => inner.close(),
    load(rom) {
      const index = inner.store;
      index.writeMany(rom.map((record) => ({ key: `${ROM_KEY_PREFIX}${record.id}`, value: record.text, tags: record.tags, source: 'cartridge:rom' })));
      let save = 0;
      for (const record of newestSaveRecords(options.cartridgePath)) {
        if (index.get(record.key)) continue;
        try {
          index.write(record.key, record.value, { source: 'cartridge:save', ...(record.tags.length ? { tags: record.tags } : {}) });
          save++;
        } catch (error) {
          logger.warn('cartridge memory skipped', { key: record.key, reason: errorMessage(error) });
        }
      }
      return { rom: rom.length, save };
    },
  };
}

function assertWritable(key: string): void {
  if (typeof key === 'string' && key.startsWith(ROM_KEY_PREFIX)) {
    throw new MemoryInputError(
      `"${key}" is part of the cartridge's signed ROM memory and is read-only.`,
      'Write what you learned under a key that does not start with "rom/"; it is kept in the cartridge\'s SAVE zone.',
    );
  }
}

/** A SAVE record id for one value of a key: `<key (≤110 chars)>:<12 hex of key and value>`. */
export function saveId(key: string, value: string): string {
  const digest = createHash('sha256').update(`${key}\u0000${value}`).digest('hex').slice(0, 12);
  return `${key.slice(0, 110).replace(/[^A-Za-z0-9]+$/, '') || 'memory'}:${digest}`;
}

/** The newest SAVE value of each key (records written by this module carry `key`). */
export function newestSaveRecords(path: string): Array<{ key: string; value: string; tags: string[]; timestamp: string }> {
  const cart = Cartridge.open(path, { readonly: true });
  try {
    const rows = cart.db.prepare("SELECT payload FROM memory WHERE zone='save'").all() as Array<{ payload: string }>;
    const newest = new Map<string, { key: string; value: string; tags: string[]; timestamp: string }>();
    for (const row of rows) {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(row.payload) as Record<string, unknown>;
      } catch {
        continue;
      }
      const key = typeof rec.key === 'string' ? rec.key : typeof rec.id === 'string' ? rec.id : '';
      const value = typeof rec.summary === 'string' ? rec.summary : '';
      if (!key || !value || key.startsWith(ROM_KEY_PREFIX)) continue;
      const timestamp = typeof rec.timestamp === 'string' ? rec.timestamp : '';
      const seen = newest.get(key);
      if (!seen || seen.timestamp < timestamp) newest.set(key, { key, value, tags: Array.isArray(rec.tags) ? rec.tags.map(String) : [], timestamp });
    }
    return [...newest.values()];
  } finally {
    cart.close();
  }
}
