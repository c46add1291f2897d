import { canonicalJson } from '../util/jcs.ts';
import { definitionError } from './errors.ts';

/**
 * Seed memory of an agent definition, in one shape whichever source holds it: an acx directory's
 * memory/*.json ({key, value, portable?, title?, tags?, timestamp?}), an agent-package's
 * memory-records.json, or a cartridge's ROM memory rows (acx.memory-record.v1 payloads).
 */
export interface MemorySeed {
  /** The record id (an acx directory's `key`). */
  id: string;
  /** What the agent reads: the value as text (non-string values as their canonical JSON). */
  text: string;
  title: string;
  tags: string[];
  /**
   * false: field-learned knowledge, seeded into a directory's own memory but never packed into a
   * cartridge (it belongs to SAVE, written at run time).
   */
  portable: boolean;
  /** The record as a cartridge stores it (before normalisation to acx.memory-record.v1). */
  record: Record<string, unknown> & { id: string; portable: boolean };
}

/** One acx-layout memory file's records; `where` names the file in messages. */
export function parseMemoryFile(value: unknown, where: string): MemorySeed[] {
  return (Array.isArray(value) ? value : [value]).map((item) => {
    const rec = item as { key?: unknown; value?: unknown; portable?: unknown; title?: unknown; tags?: unknown; timestamp?: unknown };
    if (!rec || typeof rec !== 'object' || typeof rec.key !== 'string' || !('value' in rec) || (rec.portable !== undefined && typeof rec.portable !== 'boolean')) {
      throw definitionError(`${where}: each memory record needs {key: string, value, portable?: boolean}`, 'see "Memory records" in docs/agent-layout.md');
    }
    const text = typeof rec.value === 'string' ? rec.value : canonicalJson(rec.value);
    const title = typeof rec.title === 'string' ? rec.title : rec.key;
    const tags = Array.isArray(rec.tags) ? rec.tags.map(String) : [];
    // Seed memory in an agent directory is shared knowledge unless marked otherwise.
    const portable = rec.portable !== false;
    return {
      id: rec.key,
      text,
      title,
      tags,
      portable,
      record: {
        id: rec.key,
        key: rec.key,
        value: rec.value,
        title,
        summary: text,
        sourceType: 'knowledge',
        portable,
        codebaseFingerprint: null,
        repoId: null,
        tags,
        timestamp: typeof rec.timestamp === 'string' ? rec.timestamp : '1970-01-01T00:00:00.000Z',
        impact: 'neutral',
        xpAwarded: 0,
      },
    };
  });
}

/** A stored record (agent-package memory-records.json entry, or a ROM payload) as a seed. */
export function seedOfRecord(rec: Record<string, unknown> & { id: string }, portable: boolean): MemorySeed {
  const text = typeof rec.value === 'string' ? rec.value : typeof rec.summary === 'string' ? rec.summary : '';
  return {
    id: rec.id,
    text,
    title: typeof rec.title === 'string' ? rec.title : rec.id,
    tags: Array.isArray(rec.tags) ? rec.tags.map(String) : [],
    portable,
    record: { ...rec, portable },
  };
}

/** The text a seed is searched by: its title (when it says more than the key) and its text. */
export function seedSearchText(seed: MemorySeed): string {
  const key = typeof seed.record.key === 'string' ? seed.record.key : undefined;
  const title = seed.title !== seed.id && seed.title !== key ? seed.title : '';
  return [title, seed.text].filter(Boolean).join(': ');
}
