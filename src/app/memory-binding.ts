import type { ResolvedSettings } from './settings.ts';
import { loadMemoryProviderModule, MemoryProviderError, type MemoryProviderSource } from '../memory/choice.ts';
import { createLocalHashEmbedder, LOCAL_HASH_ENGINE } from '../memory/local-hash.ts';
import { createSqliteMemoryProvider, type MemoryProvider, type SqliteMemoryProvider } from '../memory/provider.ts';
import type { PostgresMemoryRecords } from '../memory/postgres-store.ts';
import { createSemanticMemoryProvider } from '../memory/semantic.ts';
import type { StoreKind } from '../store/journal-store.ts';
import { createSdkEmbedder, DEFAULT_EMBEDDING_MODELS, type Embedder, providerEmbeddingModel, providerKeyPresent } from '../model/embedding.ts';
import type { Logger } from '../util/logger.ts';
import type { CartridgeMemoryProvider } from './cartridge-memory.ts';
import { romPluginsGranted, ROM_PLUGINS_GRANT } from './tool-plugins.ts';
import { agentWorkspace } from './workspace.ts';

/**
 * Binds the memory provider an agent's settings choose (src/memory/choice.ts): the store under
 * it — a cartridge's SAVE-aware one, else the agent's own records (its SQLite file, or with
 * --store / ACX_STORE a postgres:// URL, rows keyed by its agent id in a database many agents
 * share) — and, for `semantic`, the embedder. What was bound is reported by `acx resolved-config` (MemoryBinding).
 */
export interface MemoryBinding {
  /** The bound provider's own name (`sqlite`, `semantic`, or what a module provider calls itself). */
  provider: string;
  /** The spec as written, and where. */
  spec: string;
  source: MemoryProviderSource;
  /** A module provider's file and package (name, version); null for the built-ins. */
  module: string | null;
  package: string | null;
  version: string | null;
  /** The semantic provider's embedding engine; null for the others. */
  embedding: string | null;
  /** Where a built-in provider's records live; null for a module provider (its own business). */
  store: StoreKind | null;
  /** Why the provider asked for was not bound (a cartridge's module provider), or null. */
  refused: string | null;
}

export interface AgentMemory extends MemoryProvider {
  readonly binding: MemoryBinding;
  /** The SQLite store under a built-in provider; absent for a module provider. */
  readonly sqlite?: SqliteMemoryProvider;
  /** A cartridge's memory (ROM records, SAVE writes), for activation and its role tools. */
  readonly cartridge?: CartridgeMemoryProvider;
}

export interface OpenMemoryOptions {
  /** Write the agent directory's seed records the memory does not hold yet. Default true. */
  seed?: boolean;
  env?: NodeJS.ProcessEnv;
}

export async function openAgentMemory(settings: ResolvedSettings, logger: Logger, options: OpenMemoryOptions = {}): Promise<AgentMemory> {
  const env = options.env ?? process.env;
  const seed = options.seed ?? true;
  const asked = settings.memoryProvider;
  const cartridge = settings.cartridge;
  let spec = asked;
  let refused: string | null = null;
  if (cartridge && asked.kind === 'module') {
    const refusal = cartridgeModuleRefusal(asked.source, env);
    // The host asked for it: a misconfiguration, stop. The ROM asked for it: like a ROM tool
    // plugin, it is not loaded, loudly, and the cartridge runs on the default memory.
    if (asked.source === 'env') throw refusal;
    logger.warn('cartridge memory provider not loaded', { spec: asked.text, reason: refusal.message });
    refused = refusal.message;
    spec = { kind: 'sqlite', text: 'sqlite', source: 'default' };
  }
  if (spec.kind === 'module') {
    const loaded = await loadMemoryProviderModule(spec, { path: settings.memoryPath, agentId: settings.agent.id, logger });
    const memory = bind(loaded.provider, {
      provider: loaded.provider.name,
      spec: spec.text,
      source: spec.source,
      module: loaded.file,
      package: loaded.package?.name ?? null,
      version: loaded.package?.version ?? null,
      embedding: null,
      store: null,
      refused: null,
    });
    // A module provider is told the seeds through remember() (an upsert by key) on each open.
    for (const record of seed ? (settings.definition?.memory ?? []) : []) await memory.remember(record.id, record.text);
    return memory;
  }
  // The cartridge's container, SAVE and seal code (and node:zlib) load for a cartridge only.
  const base: SqliteMemoryProvider = cartridge
    ? (await import('./cartridge-memory.ts')).createCartridgeMemoryProvider({
        cartridgePath: cartridge.path,
        indexPath: settings.memoryPath,
        saltPath: cartridge.saltPath,
        codebaseDir: agentWorkspace(settings),
        includeForeignSave: cartridge.includeForeignSave,
        logger,
      })
    : createSqliteMemoryProvider({ path: settings.memoryPath, logger, ...(await agentRecords(settings)) });
  // A directory's own memory takes every seed, field-learned (portable:false) ones too: it is this installation's.
  if (!cartridge) {
    for (const record of seed ? (settings.definition?.memory ?? []) : []) {
      if (!(await base.store.get(record.id))) await base.store.write(record.id, record.text, { source: 'agent-seed' });
    }
  }
  // A cartridge's index stays a local SQLite file: derived data, rebuilt from ROM and SAVE on each boot.
  const store: StoreKind = !cartridge && settings.store ? 'postgres' : 'sqlite';
  const builtin = { spec: asked.text, source: asked.source, module: null, package: null, version: null, store, refused };
  const extras = { sqlite: base, ...(cartridge ? { cartridge: base as CartridgeMemoryProvider } : {}) };
  if (spec.kind === 'sqlite') return bind(base, { ...builtin, provider: 'sqlite', embedding: null }, extras);
  const embedder = await chooseEmbedder(settings, env);
  const index = cartridge ? (base as CartridgeMemoryProvider).index : undefined;
  const semantic = createSemanticMemoryProvider({ base, embedder, logger, ...(index ? { observedStore: () => index } : {}) });
  return bind(semantic, { ...builtin, provider: 'semantic', embedding: embedder.id }, extras);
}

/** The agent's own records on the PostgreSQL store, when one is set; connected on first use. */
async function agentRecords(settings: ResolvedSettings): Promise<{ records?: () => PostgresMemoryRecords }> {
  const url = settings.store;
  if (!url) return {};
  // pg (some 30 modules) loads only for an agent whose memory is on PostgreSQL.
  const { PostgresMemoryRecords } = await import('../memory/postgres-store.ts');
  return { records: () => new PostgresMemoryRecords(url, settings.storeScope) };
}

/**
 * The semantic provider's embedder: the one named (ACX_MEMORY_EMBEDDING / agent.json
 * memory.embedding), else the agent's provider's embedding model when its key is set, else the
 * local hashing engine (no key, no download).
 */
export async function chooseEmbedder(settings: Pick<ResolvedSettings, 'memoryEmbedding' | 'model'>, env: NodeJS.ProcessEnv): Promise<Embedder> {
  const named = settings.memoryEmbedding;
  if (named === LOCAL_HASH_ENGINE) return createLocalHashEmbedder();
  if (named) return createSdkEmbedder(named, await providerEmbeddingModel(named, env));
  const provider = settings.model?.provider.split('.')[0];
  const model = provider ? DEFAULT_EMBEDDING_MODELS[provider] : undefined;
  if (provider && model && providerKeyPresent(provider, env)) {
    const id = `${provider}:${model}`;
    return createSdkEmbedder(id, await providerEmbeddingModel(id, env));
  }
  return createLocalHashEmbedder();
}

/** One shape whatever was bound: the provider's hooks, and what resolved-config reports. */
function bind(provider: MemoryProvider, binding: MemoryBinding, extras: Pick<AgentMemory, 'sqlite' | 'cartridge'> = {}): AgentMemory {
  return {
    name: provider.name,
    binding,
    ...extras,
    tools: () => provider.tools(),
    observe: (exchange) => provider.observe(exchange),
    context: (scope) => provider.context(scope),
    remember: (key, value) => provider.remember(key, value),
    close: () => provider.close?.(),
  };
}

/**
 * A cartridge never loads memory code: its memory is its ROM records and its SAVE zone, which
 * only the built-in providers keep. Said plainly, with the grant the tool plugins use in mind.
 */
function cartridgeModuleRefusal(source: MemoryProviderSource, env: NodeJS.ProcessEnv): MemoryProviderError {
  if (source === 'agent.json') {
    return new MemoryProviderError(
      romPluginsGranted(env)
        ? `the cartridge's agent.json names a memory provider module; ${ROM_PLUGINS_GRANT} grants ROM tool plugins only, and acx loads no memory provider code from a ROM`
        : `the cartridge's agent.json names a memory provider module; a cartridge's code does not load unless the host grants it, and memory provider code from a ROM is not loaded at all`,
      'Set ACX_MEMORY_PROVIDER=semantic to choose recall by meaning for it.',
    );
  }
  return new MemoryProviderError(
    "ACX_MEMORY_PROVIDER names a module, but a cartridge's memory is its ROM records and SAVE zone, which only the built-in providers keep.",
    'For a cartridge set ACX_MEMORY_PROVIDER to sqlite or semantic.',
  );
}
