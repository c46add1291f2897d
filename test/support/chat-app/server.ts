// A chat app's server as a web developer writes it on acx: node:http, createAgentUIStreamResponse
// piped with .pipe() (no error handler on the piped stream), onFinish persistence to the app's
// own JSON file, the history GET from session.uiMessages(), the resume GET useChat({ resume: true })
// sends (resumeUIStreamResponse), and an abandon route. One tool that needs approval (deploy), one
// that does not (weather), and one that waits for the test (gate: it GETs `gateUrl`, which answers
// when the test says). Run as a child process:
//   node server.ts '{"home":…,"openaiBaseURL":…,"staticDir"?:…,"policy"?:"decline"|"error",
//                    "store"?: postgres URL, "acpCache"?: dir (run on the fake ACP agent), "gateUrl"?:…}'
// It prints `listening <url>` once it serves; it exits only when killed (or when it crashes,
// which is what the tests check it never does).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import { Readable } from 'node:stream';
import { createAgentUIStreamResponse, type UIMessage } from 'ai';
import { z } from 'zod';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createEngineHarness } from '../../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import type { PendingApprovalPolicy } from '../../../src/harness/pending-turn.ts';
import { openTurnStreamStore } from '../../../src/store/turn-streams.ts';
import { resumeUIStreamResponse, uiErrorText, uiMessagesResponse } from '../../../src/harness/ui-responses.ts';
import { tool } from '../../../src/tools/tool.ts';
import { fakeProfile } from '../../harness/acp/fake-profile.ts';

export interface ChatAppConfig {
  home: string;
  openaiBaseURL: string;
  staticDir?: string;
  policy?: PendingApprovalPolicy;
  /** The journal (and so the kept streams) on PostgreSQL instead of the SQLite files under `home`. */
  store?: string;
  /** Run the chat on the fake ACP agent (installed into this cache dir) instead of the engine. */
  acpCache?: string;
  gateUrl?: string;
}

const config = JSON.parse(process.argv[2]!) as ChatAppConfig;
process.env.OPENAI_API_KEY = 'sk-chat-app-test';
process.env.OPENAI_BASE_URL = config.openaiBaseURL;

const deploy = tool({
  name: 'deploy',
  description: 'Deploy the service to an environment',
  inputSchema: z.object({ env: z.string() }),
  capabilityScopes: [],
  kind: 'execute', // asks for approval under the default allow-edits
  effect: 'unsafe',
  execute: ({ env }, { sessionId }) => {
    // Evidence of a run, per chat: `<chat id> <env>` lines.
    writeFileSync(join(config.home, 'deployed'), `${sessionId} ${env}\n`, { flag: 'a' });
    return `deployed to ${env}`;
  },
});
const weather = tool({
  name: 'weather',
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ city }) => `sunny in ${city}`,
});
const gate = tool({
  name: 'gate',
  description: 'Waits until the test opens the gate',
  inputSchema: z.object({}),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: async () => (await fetch(config.gateUrl!)).text(),
});
const agent = new HarnessAgent({
  harness: config.acpCache
    ? createACP(fakeProfile(config.acpCache))
    : createEngineHarness({ model: 'openai:chat-model', home: config.home, ...(config.store ? { store: config.store } : {}) }),
  tools: { deploy, weather, gate },
  ...(config.policy ? { pendingApprovalOnNewMessage: config.policy } : {}),
  // The engine keeps its streams beside its journal; an ACP agent's are kept where the app says.
  ...(config.acpCache ? { streams: { store: await openTurnStreamStore(join(config.home, 'streams.db')) } } : {}),
});

/** The app's own store of finished chats, written by onFinish (what an app that keeps its own copy does). */
const storePath = join(config.home, 'chats.json');
const store = (): Record<string, UIMessage[]> => (existsSync(storePath) ? JSON.parse(readFileSync(storePath, 'utf8')) : {});

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const history = /^\/api\/chat\/([\w-]+)$/.exec(url.pathname);
    const abandon = /^\/api\/chat\/([\w-]+)\/abandon$/.exec(url.pathname);
    const stored = /^\/api\/chat\/([\w-]+)\/stored$/.exec(url.pathname);
    const resume = /^\/api\/chat\/([\w-]+)\/stream$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/api/chat') {
      const { id, messages } = (await body(req)) as { id: string; messages: UIMessage[] };
      const response = await createAgentUIStreamResponse({
        agent,
        uiMessages: messages,
        options: { sessionId: id },
        onError: uiErrorText,
        onFinish: ({ messages: all }) => writeFileSync(storePath, JSON.stringify({ ...store(), [id]: all })),
      });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      Readable.fromWeb(response.body! as never).pipe(res);
      return;
    }
    if (req.method === 'GET' && history) {
      const response = await uiMessagesResponse(await agent.createSession({ sessionId: history[1]! }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
      return;
    }
    if (req.method === 'GET' && resume) {
      const response = await resumeUIStreamResponse({ agent, chatId: resume[1]! });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) Readable.fromWeb(response.body as never).pipe(res);
      else res.end();
      return;
    }
    if (req.method === 'GET' && stored) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(store()[stored[1]!] ?? []));
      return;
    }
    if (req.method === 'POST' && abandon) {
      const session = await agent.createSession({ sessionId: abandon[1]! });
      const turn = await session.unfinishedTurn();
      const abandoned = turn ? await session.abandonTurn(turn.turnId, 'the user cancelled') : false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ abandoned }));
      return;
    }
    if (req.method === 'GET' && config.staticDir) {
      const path = normalize(join(config.staticDir, url.pathname === '/' ? 'index.html' : url.pathname));
      if (path.startsWith(config.staticDir) && existsSync(path)) {
        res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
        res.end(readFileSync(path));
        return;
      }
    }
    res.writeHead(404).end();
  } catch (error) {
    // A request the route refuses (createAgentUIStreamResponse validates the chat) is a 400, not a crash.
    console.error(error);
    if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(error instanceof Error ? error.message : String(error));
  }
});
server.listen(0, '127.0.0.1', () => console.log(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}`));
