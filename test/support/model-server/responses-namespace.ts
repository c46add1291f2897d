// An add-on for the scripted model server (kept outside its core): newer Codex sends MCP tools
// to the OpenAI Responses API as `{ type: 'namespace', name: 'mcp__<server>', tools: [...] }`
// and only routes a `function_call` that carries `namespace`. This loopback proxy sits in front
// of the model server and, for `/v1/responses`, rewrites a scripted call named
// `<namespace>__<tool>` (a namespace the request declared) into `{ name: <tool>, namespace }`,
// in JSON and SSE answers alike. Everything else passes through untouched.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface NamespaceProxy {
  url: string;
  openaiBaseURL: string;
  close(): Promise<void>;
}

function rewriteItem(item: any, namespaces: string[]): void {
  if (!item || item.type !== 'function_call' || typeof item.name !== 'string' || item.namespace) return;
  const ns = namespaces.find((n) => item.name.startsWith(`${n}__`));
  if (!ns) return;
  item.name = item.name.slice(ns.length + 2);
  item.namespace = ns;
}

function rewriteEvent(event: any, namespaces: string[]): void {
  rewriteItem(event?.item, namespaces);
  for (const item of event?.response?.output ?? event?.output ?? []) rewriteItem(item, namespaces);
}

export async function startResponsesNamespaceProxy(upstreamUrl: string): Promise<NamespaceProxy> {
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    let namespaces: string[] = [];
    if (req.url?.startsWith('/v1/responses')) {
      try {
        namespaces = (JSON.parse(raw.toString('utf8')).tools ?? []).filter((t: any) => t.type === 'namespace').map((t: any) => String(t.name));
      } catch {}
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers['content-length'];
    const upstream = await fetch(upstreamUrl + req.url, { method: req.method ?? 'GET', headers: headers as Record<string, string>, ...(raw.length ? { body: raw } : {}) });
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
    });
    res.writeHead(upstream.status, out);
    if (!upstream.body) return res.end();
    const sse = (upstream.headers.get('content-type') ?? '').includes('text/event-stream');
    if (!sse) {
      const text = await upstream.text();
      try {
        const json = JSON.parse(text);
        rewriteEvent(json, namespaces);
        return res.end(JSON.stringify(json));
      } catch {
        return res.end(text);
      }
    }
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of upstream.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        let line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith('data: ') && namespaces.length) {
          try {
            const event = JSON.parse(line.slice(6));
            rewriteEvent(event, namespaces);
            line = `data: ${JSON.stringify(event)}`;
          } catch {}
        }
        res.write(line + '\n');
      }
    }
    res.end(buffered);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    openaiBaseURL: `${url}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
