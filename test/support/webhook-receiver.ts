// A webhook subscriber on 127.0.0.1 that records every delivery it gets (raw body and headers), and
// answers with the status the test chooses, so delivery, signing and retries are seen as a router sees them.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scaled } from './time-scale.ts';

export interface ReceivedDelivery {
  headers: Record<string, string>;
  raw: string;
  body: any;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** The status the next deliveries get (default 200). */
  respondWith(status: number): void;
  /** Resolves when `count` deliveries have arrived (or rejects after `ms`). */
  waitFor(count: number, ms?: number): Promise<ReceivedDelivery[]>;
  /** Runs on each delivery after it is recorded and before it is answered. */
  onDelivery?: (delivery: ReceivedDelivery) => Promise<void> | void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let status = 200;
  const received: ReceivedDelivery[] = [];
  const waiters: Array<() => boolean> = [];
  const receiver: WebhookReceiver = {
    url: '',
    received,
    respondWith: (next) => (status = next),
    waitFor(count, ms = scaled(10_000)) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (received.length >= count) {
            clearTimeout(timer);
            resolve(received.slice());
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => reject(new Error(`${received.length} of ${count} deliveries arrived in ${ms} ms`)), ms);
        if (!check()) waiters.push(check);
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const delivery = { headers, raw, body: JSON.parse(raw) };
      const answer = status;
      if (answer >= 200 && answer < 300) received.push(delivery);
      else received.push({ ...delivery, headers: { ...headers, 'x-test-answered': String(answer) } });
      try {
        await receiver.onDelivery?.(delivery);
      } finally {
        res.writeHead(answer).end();
        for (const waiter of waiters.splice(0)) if (!waiter()) waiters.push(waiter);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/basecradle`;
  return receiver;
}
