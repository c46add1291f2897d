import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { z } from 'zod';

/**
 * Prompts an MCP server offers (`acx mcp` offers an agent's skills): each is a text with
 * `{{name}}` placeholders for its arguments, served through the SDK's McpServer so listing,
 * argument checks and completion are the SDK's. An argument whose values are known completes
 * to those starting with what the user typed.
 */
export interface ServedPromptArgument {
  name: string;
  description?: string | undefined;
  required: boolean;
  /** Offered as completions; empty when any text will do. */
  values?: readonly string[] | undefined;
}

export interface ServedPrompt {
  name: string;
  description: string;
  arguments: readonly ServedPromptArgument[];
  /** The prompt's text; `{{name}}` stands for an argument's value. */
  text: string;
}

/**
 * The text with each `{{name}}` replaced by its value (an optional argument not given: nothing).
 * Values the text has no place for are listed after it, so an argument is never dropped silently.
 */
export function fillPrompt(prompt: Pick<ServedPrompt, 'text' | 'arguments'>, values: Readonly<Record<string, string | undefined>>): string {
  const placed = new Set<string>();
  const text = prompt.text.replace(/\{\{\s*([A-Za-z][A-Za-z0-9_-]*)\s*\}\}/g, (whole, name: string) => {
    if (!prompt.arguments.some((arg) => arg.name === name)) return whole;
    placed.add(name);
    return values[name] ?? '';
  });
  const unplaced = prompt.arguments.filter((arg) => !placed.has(arg.name) && values[arg.name] !== undefined && values[arg.name] !== '');
  if (unplaced.length === 0) return text;
  return `${text}\n\nArguments:\n${unplaced.map((arg) => `- ${arg.name}: ${values[arg.name]}`).join('\n')}`;
}

/** Known values starting with `typed`, case-insensitively. */
export function completeFrom(values: readonly string[], typed: string): string[] {
  const lower = typed.toLowerCase();
  return values.filter((value) => value.toLowerCase().startsWith(lower));
}

function argsShape(args: readonly ServedPromptArgument[]): Record<string, z.ZodType<string | undefined>> {
  const shape: Record<string, z.ZodType<string | undefined>> = {};
  for (const arg of args) {
    const values = arg.values ?? [];
    const complete = (typed: string | undefined) => completeFrom(values, typed ?? '');
    // The SDK finds an argument's completer on the field itself, and (deciding whether to declare
    // completions) inside an optional one: both are marked. `describe` copies a schema, so it
    // comes before the outer mark.
    const inner = values.length > 0 ? completable(z.string(), complete) : z.string();
    let field: z.ZodType<string | undefined> = arg.required ? inner : inner.optional();
    if (arg.description) field = field.describe(arg.description);
    shape[arg.name] = values.length > 0 ? completable(field, complete as never) : field;
  }
  return shape;
}

/** Registers `prompts` on one session's server: prompts/list, prompts/get, and completion of known values. */
export function registerPrompts(server: McpServer, prompts: readonly ServedPrompt[]): void {
  for (const prompt of prompts) {
    const config = { description: prompt.description, ...(prompt.arguments.length > 0 ? { argsSchema: argsShape(prompt.arguments) } : {}) };
    server.registerPrompt(prompt.name, config, ((values?: Record<string, string | undefined>) => ({
      description: prompt.description,
      messages: [{ role: 'user' as const, content: { type: 'text' as const, text: fillPrompt(prompt, prompt.arguments.length > 0 ? (values ?? {}) : {}) } }],
    })) as never);
  }
}
