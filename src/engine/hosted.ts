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
