import { seedOfRecord } from './memory.ts';
import { AGENT_JSON_PATH, type AgentSource, type RomFileMap } from './source.ts';

/**
 * A cartridge's ROM as a definition source: its `rom/` files as they are, its meta, and its ROM
 * memory rows. The caller verifies the cartridge (and applies trust) before handing it here.
 */
export function readRomSource(path: string, rom: RomFileMap): AgentSource {
  const files: AgentSource['files'] = new Map();
  for (const name of rom.listFiles('rom/')) {
    const bytes = rom.getFile(name);
    if (bytes) files.set(name, { name, bytes, source: name });
  }
  const memory = [];
  for (const row of rom.romMemory()) {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(row.payload) as Record<string, unknown>;
    } catch {
      continue; // verify already rejected malformed payloads as tampered
    }
    memory.push(seedOfRecord({ ...rec, id: row.id }, true));
  }
  return {
    kind: 'cartridge',
    path,
    layout: files.has(AGENT_JSON_PATH) ? 'acx' : 'agent-package',
    files,
    meta: rom.allMeta(),
    memory,
    notes: [],
    inputs: [],
    links: [],
  };
}
