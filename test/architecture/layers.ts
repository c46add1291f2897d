// The layer order of ../shared/docs/ARCHITECTURE.md, bottom to top, and where each src/ file sits
// in it today. Folders of the target layout map to themselves; the folders the redesign has not
// moved yet (acp/, agent/, config/, cli/) map to the layer their code is bound for, so an edge is
// judged by where it will have to hold.
export const LAYERS = [
  'core',
  'util',
  'store',
  'model',
  'memory',
  'tools',
  'engine',
  'mcp',
  'agent-def',
  'cartridge',
  'contract',
  'channel',
  'harness',
  'app',
  'frontends',
  'entry', // src/index.ts and src/exports/*: the package's entry points, above everything
] as const;
export type Layer = (typeof LAYERS)[number] | 'platform';

/** Files bound for harness/ (the Harness interface, HarnessAgent and its AI SDK shapes, the engine harness). */
const HARNESS_FILES = new Set([
  'agent/harness.ts',
  'agent/harness-agent.ts',
  'agent/harness-results.ts',
  'agent/sdk-input.ts',
  'agent/sdk-turn.ts',
  'agent/replay-stream.ts',
  'agent/engine-harness.ts',
  'agent/session-lease.ts',
  'agent/session-state.ts',
]);

/** The per-event runner and its settings, bound for frontends/wake. */
const WAKE_FILES = new Set(['agent/wake.ts', 'config/wake-settings.ts']);

export function layerOf(file: string): Layer {
  const top = file.includes('/') ? file.slice(0, file.indexOf('/')) : file;
  if (file === 'node-guard.ts') return 'core'; // a leaf: reads package.json, imports nothing
  if (file === 'index.ts' || top === 'exports') return 'entry';
  if (top === 'platform') return 'platform';
  if (file.startsWith('acp/server/')) return 'frontends';
  if (top === 'acp') return 'harness';
  if (WAKE_FILES.has(file)) return 'frontends';
  if (top === 'agent') return HARNESS_FILES.has(file) ? 'harness' : 'app';
  if (top === 'config') return 'app';
  if (top === 'cli') return 'frontends';
  if ((LAYERS as readonly string[]).includes(top)) return top as Layer;
  throw new Error(`src/${file}: its folder "${top}" has no place in ARCHITECTURE.md's layers; add it to test/architecture/layers.ts`);
}

/**
 * Whether `from` may import `to`: only from below, or within its own layer. The platform is a
 * separate application: it imports only core (the shared vocabulary: its errors are AcxErrors,
 * so the CLI reports them like any other), util and store, and only a frontend (`acx platform
 * serve`) starts it.
 */
export function allowed(from: Layer, to: Layer): boolean {
  if (from === 'platform') return to === 'platform' || to === 'core' || to === 'util' || to === 'store';
  if (to === 'platform') return from === 'frontends';
  return from === to || LAYERS.indexOf(to) < LAYERS.indexOf(from);
}
