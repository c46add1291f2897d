/**
 * The built-in tools an agent names in agent.json `tools` (src/app/toolset.ts offers them).
 * Without `tools` an agent gets the defaults; the others are opt-in.
 */
export const DEFAULT_BUILTINS = ['memory', 'fs', 'execute', 'web_fetch', 'dispatch'] as const;
export const KNOWN_BUILTINS = [...DEFAULT_BUILTINS, 'shell', 'system_prompt'] as const;
export type BuiltinName = (typeof KNOWN_BUILTINS)[number];

export function isBuiltinName(name: string): name is BuiltinName {
  return (KNOWN_BUILTINS as readonly string[]).includes(name);
}
