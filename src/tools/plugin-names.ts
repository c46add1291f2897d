import { extname } from 'node:path';

// Apart from the plugin loader (plugins.ts): reading an agent definition names its plugin files
// without loading the tool registry, the AI SDK and the schema validators behind it.

export const PLUGIN_EXTENSIONS = ['.js', '.mjs', '.ts'] as const;

/** Whether `name` is a plugin file name (not hidden, not a declaration file). */
export function isPluginFileName(name: string): boolean {
  return !name.startsWith('.') && !name.endsWith('.d.ts') && (PLUGIN_EXTENSIONS as readonly string[]).includes(extname(name));
}
