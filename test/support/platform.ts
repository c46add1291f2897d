// The embedded platform as the tests' peer: a real server on 127.0.0.1 over a real SQLite home in a
// temp dir. Every answer it gives, to whichever client (the test's own calls, acx's client, a wake
// in a child process), is checked against openapi.yaml (test/support/openapi.ts) as it leaves, and
// a file whose tests drew an answer the spec does not allow fails (test/support/file-checks.ts).
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addUser, type AddedUser, type PasswordHash, type PlatformAnswer, type PlatformOptions, type RunningPlatform, startPlatform } from '../../src/platform/index.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { registerFileCheck } from './file-checks.ts';
import { OPENAPI_MISSING, openApiSpec } from './openapi.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON when the body is JSON, otherwise the text. */
  body: any;
  text: string;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  form?: FormData;
  body?: string;
  headers?: Record<string, string>;
  /** The client's own address (any 127.x.y.z): the request goes through node:http, which can bind one. */
  from?: string;
}

/** What the file's test platforms answered, as `METHOD /template STATUS`, and what the spec found wrong. */
export const reached = new Set<string>();
export const violations: string[] = [];
registerFileCheck('openapi.yaml', () => violations);

/** Holds one answer of a test platform to the spec: the operation its route is, else (an error) a problem document. */
function checkAnswer(answer: PlatformAnswer): void {
  if (OPENAPI_MISSING) return;
  const spec = openApiSpec();
  const contentType = answer.headers.get('content-type');
  const body = answer.body !== undefined && /json/.test(contentType ?? '') && answer.body !== '' ? JSON.parse(answer.body) : answer.body;
  const op = answer.route === undefined ? undefined : spec.forRoute(answer.method, answer.route);
  if (op) {
    reached.add(`${op.method} ${op.path} ${answer.status}`);
    violations.push(...spec.check(op, answer.status, contentType, body));
  } else if (answer.status >= 400) {
    violations.push(...spec.checkError(`${answer.method} ${answer.route ?? answer.path.split('?')[0]} → ${answer.status}`, contentType, body));
  }
}

export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | FormData | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  if (options.form) body = options.form;
  const response =
    options.from === undefined ? await fetch(`${baseUrl}${path}`, { method, headers, body }) : await requestFrom(options.from, `${baseUrl}${path}`, method, headers, body);
  return parsedResponse(response.status, response.headers, await response.text());
}

/** A response as tests see it: its body parsed when it is JSON. (The platform held it to the spec as it left.) */
export function parsedResponse(status: number, headers: Headers, text: string): ApiResponse {
  const parsed: unknown = /json/.test(headers.get('content-type') ?? '') && text !== '' ? JSON.parse(text) : text;
  return { status, headers, body: parsed, text };
}

/** One request from a chosen local address, answered as a fetch Response. */
function requestFrom(localAddress: string, url: string, method: string, headers: Record<string, string>, body: string | FormData | undefined): Promise<Response> {
  if (body instanceof FormData) throw new Error('call(): a form cannot be sent with `from`');
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) answer.set(name, String(value));
        const status = res.statusCode!;
        resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: answer }));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface TestPlatform {
  url: string;
  home: string;
  logs: string[];
  running: RunningPlatform;
  /** A user with its first token; `passwordHash` (from hashPassword) with `email` enables POST /session. */
  user(handle: string, kind?: 'ai' | 'human', extra?: { trust?: string[]; email?: string; passwordHash?: PasswordHash; admin?: boolean }): AddedUser;
  api(method: string, path: string, options?: CallOptions): Promise<ApiResponse>;
  /** Stops the server and starts a new one on the same home (and the same port). */
  restart(options?: Partial<PlatformOptions>): Promise<void>;
  close(): Promise<void>;
}

export async function startTestPlatform(options: Partial<PlatformOptions> = {}): Promise<TestPlatform> {
  const home = options.home ?? mkdtempSync(join(tmpdir(), 'acx-platform-'));
  const logger = createMemoryLogger('debug');
  let running = await startPlatform({ port: 0, logger, onAnswer: checkAnswer, ...options, home });
  const platform: TestPlatform = {
    get url() {
      return running.url;
    },
    home,
    logs: logger.lines,
    get running() {
      return running;
    },
    user: (handle, kind = 'human', extra = {}) => addUser(home, { handle, kind, ...extra }),
    api: (method, path, callOptions) => call(running.url, method, path, callOptions),
    async restart(more = {}) {
      await running.close();
      // Let this process's fetch see the old server's sockets close before it picks one to reuse.
      await new Promise((resolve) => setTimeout(resolve, 50));
      running = await startPlatform({ logger, onAnswer: checkAnswer, ...options, port: running.port, ...more, home });
    },
    close: () => running.close(),
  };
  return platform;
}

/** Two users who trust each other and a timeline the first owns with the second on it. */
export async function sharedTimeline(platform: TestPlatform, owner: AddedUser, participant: AddedUser, name = 'Room'): Promise<string> {
  const created = await platform.api('POST', '/timelines', { token: owner.token, json: { timeline: { name } } });
  const uuid = created.body.timeline.uuid as string;
  const added = await platform.api('POST', `/timelines/${uuid}/participations`, { token: owner.token, json: { user_id: participant.uuid } });
  if (added.status !== 201) throw new Error(`could not add @${participant.handle}: ${added.text}`);
  return uuid;
}

/** Posts a message as the token's user: its uuid, and when the platform stamped it (ms since the epoch). */
export async function postMessage(platform: TestPlatform, token: string, timeline: string, body: string): Promise<{ uuid: string; at: number }> {
  const sent = await platform.api('POST', `/timelines/${timeline}/messages`, { token, json: { message: { body } } });
  if (sent.status !== 201) throw new Error(`could not post to ${timeline}: ${sent.status} ${sent.text}`);
  return { uuid: sent.body.message.content.uuid as string, at: Date.parse(sent.body.message.created_at as string) };
}
