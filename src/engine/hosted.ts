import type { ToolSet } from 'ai';
import type { ProviderBuiltins } from '../model/builtins.ts';
import type { ModelSource } from './model-call.ts';

/**
 * The engine's side of the provider's server-side built-ins: they are declared with the engine's
 * own tools, they run inside the model call (never here), and what they cite and produce is
 * carried to the end of the turn as footers on the reply.
 */

/** The tool set one call declares: the engine's function tools plus the built-ins, merged once per change. */
export function callToolSet(builtins: ProviderBuiltins | undefined): (functions: ToolSet | undefined) => ToolSet | undefined {
  const merged = new WeakMap<ToolSet, ToolSet>();
  return (functions) => {
    if (!builtins || builtins.names.length === 0) return functions;
    const hosted = builtins.tools();
    let set = merged.get(hosted);
    if (!set) merged.set(hosted, (set = { ...(functions ?? {}), ...hosted }));
    return set;
  };
}

/**
 * A step's cited sources ride its journaled assistant message (under an `acx` provider-options
 * key no provider reads), so a turn resumed in another process still ends with its footer.
 */
export function withSourcesRecorded<M extends { providerOptions?: unknown }>(message: M, sources: readonly ModelSource[]): M {
  if (sources.length === 0) return message;
  return withAcxRecord(message, 'sources', sources.map((s) => ({ ...s })));
}

/** Records a value on a journaled message under the `acx` provider-options key, which no provider reads (it costs no tokens). */
export function withAcxRecord<M extends { providerOptions?: unknown }>(message: M, key: string, value: unknown): M {
  const options = (message.providerOptions ?? {}) as Record<string, Record<string, unknown>>;
  return { ...message, providerOptions: { ...options, acx: { ...(options.acx ?? {}), [key]: value } } };
}

/** The sources recorded on a turn's journaled assistant messages, in order. */
export function recordedSources(messages: ReadonlyArray<{ role: string; providerOptions?: unknown }>): ModelSource[] {
  const sources: ModelSource[] = [];
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    const recorded = (message.providerOptions as { acx?: { sources?: unknown } } | undefined)?.acx?.sources;
    if (Array.isArray(recorded)) addSources(sources, recorded.filter((s): s is ModelSource => typeof s?.url === 'string' && typeof s?.id === 'string'));
  }
  return sources;
}

/** Adds a call's sources to the turn's, by URL, keeping first-seen order. */
export function addSources(into: ModelSource[], more: readonly ModelSource[]): ModelSource[] {
  const fresh = more.filter((source) => !into.some((known) => known.url === source.url));
  into.push(...fresh);
  return fresh;
}

/**
 * The reply with what the built-ins contributed: a `Sources:` footer (one cited URL a line,
 * titled when the provider gave a title) and a `Files:` footer (workspace paths of files a code
 * run produced).
 */
export function withFooters(text: string, sources: readonly ModelSource[], files: readonly string[]): string {
  const blocks: string[] = [];
  if (sources.length > 0) {
    blocks.push(['Sources:', ...sources.map((source) => `- ${source.title && source.title !== source.url ? `${source.title}: ` : ''}${source.url}`)].join('\n'));
  }
  if (files.length > 0) blocks.push(['Files:', ...files.map((file) => `- ${file}`)].join('\n'));
  if (blocks.length === 0) return text;
  return [text.trimEnd(), ...blocks].filter(Boolean).join('\n\n');
}
