import type { ToolContentPart, ToolOutput } from '../tools/tool.ts';
import { AcxError, errorMarker, setMarker } from '../core/errors.ts';

/**
 * Content mapping between MCP tool results and acx tool outputs, both directions.
 * MCP text → text part; MCP image → image part (the engine shows it to a vision model and
 * describes it to a text-only one); other blocks (audio, embedded resources, links) are noted
 * by type rather than inlined.
 */

/** A content block as MCP carries it (only the fields acx reads). */
export interface McpContentBlock {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
  [key: string]: unknown;
}

/** What a bridged MCP tool's execute returns when there is more than plain text. */
export interface McpToolOutput {
  content: ToolContentPart[];
  /** The server's structured result, kept as it came (validated by the SDK against outputSchema). */
  structuredContent?: Record<string, unknown>;
}

const MCP_TOOL_MARKER = errorMarker('McpToolError');

/** An MCP tool answered with `isError: true`; the engine reports the message to the model. */
export class McpToolError extends AcxError {
  readonly content: ToolContentPart[];
  constructor(message: string, content: ToolContentPart[]) {
    super('mcp-tool-error', message);
    setMarker(this, MCP_TOOL_MARKER);
    this.name = 'McpToolError';
    this.content = content;
  }

  static override isInstance(error: unknown): error is McpToolError {
    return AcxError.hasMarker(error, MCP_TOOL_MARKER);
  }
}

/** Decoded size of base64 data, without decoding it. */
export function base64ByteLength(data: string): number {
  const clean = data.replace(/\s+/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB (${bytes} bytes)`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB (${bytes} bytes)`;
}

/**
 * The honest placeholder a text-only model gets instead of an image's pixels: it names the
 * media type and size, so the model knows an image exists without being blind-sent it.
 */
export function describeImageForTextModel(part: { data: string; mediaType: string }): string {
  return `[image: ${part.mediaType}, ${formatBytes(base64ByteLength(part.data))} — not shown because this model does not accept images]`;
}

function noteBlock(block: McpContentBlock): string {
  const bytes = (data: string | undefined) => (data === undefined ? '' : `, ${formatBytes(base64ByteLength(data))}`);
  switch (block.type) {
    case 'audio':
      return `[audio content: ${block.mimeType ?? 'unknown type'}${bytes(block.data)} — not inlined]`;
    case 'resource': {
      const r = block.resource ?? {};
      const size = r.text !== undefined ? `, ${r.text.length} characters of text` : bytes(r.blob);
      return `[embedded resource: ${r.uri ?? 'no uri'} (${r.mimeType ?? 'unknown type'}${size}) — not inlined]`;
    }
    case 'resource_link':
      return `[resource link: ${block.name ?? ''} ${block.uri ?? ''}${block.mimeType ? ` (${block.mimeType})` : ''}]`.replace(/\s+\]/, ']');
    default:
      return `[${block.type} content — not inlined]`;
  }
}

export function fromMcpContent(blocks: readonly McpContentBlock[] | undefined): ToolContentPart[] {
  const parts: ToolContentPart[] = [];
  for (const block of blocks ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image' && typeof block.data === 'string') {
      parts.push({ type: 'image', data: block.data, mediaType: block.mimeType ?? 'application/octet-stream' });
    } else parts.push({ type: 'text', text: noteBlock(block) });
  }
  return parts;
}

export function textOf(parts: readonly ToolContentPart[]): string {
  return parts
    .map((p) => (p.type === 'text' ? p.text : describeImageForTextModel(p)))
    .join('\n');
}

/** An MCP CallToolResult → what a bridged tool returns (or throws, for `isError`). */
export function mapCallToolResult(result: {
  content?: readonly McpContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  toolResult?: unknown;
}): ToolOutput {
  // Servers on the 2024-10-07 revision answer with `toolResult` instead of content.
  if (result.content === undefined && 'toolResult' in result) {
    return typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  }
  const parts = fromMcpContent(result.content);
  if (result.isError) {
    throw new McpToolError(textOf(parts) || 'the MCP tool reported an error without a message', parts);
  }
  if (result.structuredContent !== undefined) {
    return { content: parts, structuredContent: result.structuredContent } satisfies McpToolOutput;
  }
  if (parts.every((p) => p.type === 'text')) return textOf(parts);
  return { content: parts } satisfies McpToolOutput;
}

// ---- host side: acx ToolOutput → MCP CallToolResult -------------------------------------

export interface McpCallToolResult {
  content: Array<{ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

function isPart(value: unknown): value is ToolContentPart {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (v.type === 'text' && typeof v.text === 'string') || (v.type === 'image' && typeof v.data === 'string' && typeof v.mediaType === 'string');
}

function toMcpBlocks(parts: readonly ToolContentPart[]): McpCallToolResult['content'] {
  return parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image', data: p.data, mimeType: p.mediaType }));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * A tool's output as an MCP result. JSON objects also go out as `structuredContent`, and
 * their text is always kept in `content` too (clients that ignore structured output still see it).
 */
export function toCallToolResult(output: ToolOutput): McpCallToolResult {
  if (output === undefined || output === null) return { content: [{ type: 'text', text: '(no output)' }] };
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }] };
  if (Array.isArray(output) && output.length > 0 && output.every(isPart)) return { content: toMcpBlocks(output) };
  if (isPlainObject(output) && Array.isArray(output.content) && output.content.every(isPart)) {
    const result: McpCallToolResult = { content: toMcpBlocks(output.content as ToolContentPart[]) };
    if (isPlainObject(output.structuredContent)) result.structuredContent = output.structuredContent;
    return result;
  }
  const text = JSON.stringify(output) ?? String(output);
  if (isPlainObject(output)) return { content: [{ type: 'text', text }], structuredContent: output };
  return { content: [{ type: 'text', text }] };
}

export function errorResult(message: string): McpCallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
