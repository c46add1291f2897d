import type { MemorySeed } from './memory.ts';

/**
 * Where an agent definition is read from. A directory on disk and a cartridge's ROM are both
 * presented as one map of ROM-named files (a directory's `harness-requirements.json` is
 * `rom/manifest/harness-requirements.json`, its `skills/x/SKILL.md` is `rom/skills/x/SKILL.md`,
 * …), so the one reader (definition.ts) reads both the same way, and what a build packs is
 * exactly what a directory run reads.
 */

/** A file of the definition under its ROM name. `source`: the path in the directory, the ROM name, or "<generated>". */
export interface DefinitionFile {
  name: string;
  bytes: Buffer;
  source: string;
}

export type AgentLayout = 'acx' | 'agent-package';

/** What a build puts in a cartridge's meta and catalog besides agent.json (agent-package layout). */
export interface SourceCatalog {
  description: string;
  license: string;
  authors: Array<{ name: string; url?: string }>;
  tags: string[];
  createdAt: string | null;
}

export interface AgentSource {
  kind: 'directory' | 'cartridge';
  /** The directory, or the cartridge file. */
  path: string;
  layout: AgentLayout;
  files: Map<string, DefinitionFile>;
  /** Cartridge meta; for an agent-package directory, the meta its build writes; else empty. */
  meta: Record<string, string>;
  memory: MemorySeed[];
  /** Human-readable notes on records a cartridge does not take (e.g. bound to a repository). */
  notes: string[];
  /** Everything read, for the scrub gate: directory-relative names and bytes. */
  inputs: Array<{ file: string; bytes: Buffer }>;
  /** Directory files that are symbolic links (read through; a build refuses them). */
  links: string[];
  /** The agent-package layout's catalog (acx layout: from agent.json; cartridge: its meta). */
  catalog?: SourceCatalog;
}

/** The part of a cartridge the reader needs: its ROM files, meta and ROM memory rows. */
export interface RomFileMap {
  listFiles(prefix: string): string[];
  getFile(name: string): Buffer | null;
  allMeta(): Record<string, string>;
  romMemory(): Array<{ id: string; payload: string }>;
}

export const AGENT_JSON_PATH = 'rom/agent.json';
export const SYSTEM_PROMPT_PATH = 'rom/prompts/system-prompt.md';
export const INITIALIZE_PATH = 'rom/prompts/initialize.md';
export const REQUIREMENTS_PATH = 'rom/manifest/harness-requirements.json';
export { LOOP_POLICY_PATH } from './policy.ts';
