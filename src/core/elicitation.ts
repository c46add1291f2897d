/**
 * Elicitation: a tool (an MCP server, through its `elicitation/create`) asks the user for input
 * while it runs. It reaches whoever runs the turn — `onElicitation` on the library's calls, the
 * chat prompt, the editor over ACP — the way approvals do; where nobody can answer (a wake, a
 * worker, a non-interactive `acx run`) it is declined and the decline is logged with the reason.
 */

/** One field of the form: a flat JSON Schema of a string, number, integer, boolean, or (multi-)choice. */
export interface ElicitationField {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
  title?: string;
  description?: string;
  default?: unknown;
  /** A single choice: its values (and, with `oneOf`, their titles). */
  enum?: string[];
  oneOf?: Array<{ const: string; title: string }>;
  /** A multiple choice (`type: 'array'`): the values offered. */
  items?: { enum?: string[]; anyOf?: Array<{ const: string; title: string }> };
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  format?: string;
  [key: string]: unknown;
}

export interface ElicitationRequest {
  /** Who asks: the MCP server's name (its tools are `<server>__<tool>`). */
  server: string;
  /** The tool call it asks during. */
  toolCallId: string;
  toolName: string;
  /** What the server says it needs, to show the user as it is. */
  message: string;
  /** The form: an object schema of flat fields. */
  requestedSchema: { type: 'object'; properties: Record<string, ElicitationField>; required?: string[] };
}

export type ElicitationValue = string | number | boolean | string[];

/** `accept` with the answers; `decline` (the user said no) or `cancel` (dismissed without a choice), optionally why. */
export type ElicitationResult =
  | { action: 'accept'; content: Record<string, ElicitationValue> }
  | { action: 'decline' | 'cancel'; reason?: string };

export type ElicitationHandler = (request: ElicitationRequest) => Promise<ElicitationResult>;
