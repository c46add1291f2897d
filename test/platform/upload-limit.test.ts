// An upload over the limit is answered 413 problem+json, and the answer reaches a client that
// sends its whole body before it reads (as many HTTP clients do): the server reads the rest of
// the body and throws it away rather than closing the socket under the client, which would
// reset the connection and lose the answer. Nothing of the upload is kept.
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiResponse, parsedResponse, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

let p: TestPlatform | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
  expect(violations).toEqual([]);
});

/** Past the 64 MiB @hono/node-server's clean-up read before it closed the socket. */
const OVERSIZED = 80 * 1024 * 1024;

/**
 * A raw HTTP/1.1 connection used the way many clients use one: write the whole request, body and
 * all, without looking at the socket, and only then read the answer. If the server closes the
 * connection while the body is still going out, a write fails and the answer is lost.
 */
class SendThenRead {
  private received = Buffer.alloc(0);
  private socket!: Socket;

  static async open(url: string): Promise<SendThenRead> {
    const connection = new SendThenRead();
    const { hostname, port } = new URL(url);
    connection.socket = connect({ host: hostname, port: Number(port) });
    connection.socket.pause();
    await new Promise<void>((resolve, reject) => connection.socket.once('connect', resolve).once('error', reject));
    return connection;
  }

  /** Writes the head and `bodyBytes` of body (chunked, or as the head's Content-Length says). */
  async send(head: string, bodyBytes = 0, chunked = false): Promise<void> {
    const chunk = Buffer.alloc(256 * 1024, 'a');
    const frame = chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
    await this.write(head);
    for (let sent = 0; sent < bodyBytes; sent += chunk.length) await this.write(frame);
    if (chunked) await this.write('0\r\n\r\n');
  }

  private write(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(new Error(`the connection failed while the body was being sent: ${error.message}`));
      this.socket.once('error', onError);
      this.socket.write(data, (error) => {
        this.socket.off('error', onError);
        if (error) onError(error);
        else resolve();
      });
    });
  }

  /** The next answer on the connection, read only now (the platform held it to the spec as it left). */
  async read(): Promise<ApiResponse> {
    for (;;) {
      const end = this.received.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.received.subarray(0, end).toString('latin1').split('\r\n');
        const headers = new Headers(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]));
        const length = Number(headers.get('content-length'));
        if (this.received.length >= end + 4 + length) {
          const text = this.received.subarray(end + 4, end + 4 + length).toString('utf8');
          this.received = this.received.subarray(end + 4 + length);
          return parsedResponse(Number(statusLine!.split(' ')[1]), headers, text);
        }
      }
      this.received = Buffer.concat([this.received, await this.nextData()]);
    }
  }

  private nextData(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.socket.off('data', onData).off('end', onEnd).off('error', onEnd);
        this.socket.pause();
      };
      const onData = (data: Buffer) => (done(), resolve(data));
      const onEnd = (error?: Error) => (done(), reject(new Error(`the connection ended before the answer was complete${error ? `: ${error.message}` : ''}`)));
      this.socket.on('data', onData).once('end', onEnd).once('error', onEnd);
      this.socket.resume();
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('an upload over the limit', () => {
  async function setUp() {
    p = await startTestPlatform({ maxAssetBytes: 1000 });
    const ada = p.user('ada');
    const timeline = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'x' } } })).body.timeline.uuid as string;
    const path = `/timelines/${timeline}/assets`;
    const host = new URL(p.url).host;
    /** Sends an oversized upload whole, then reads the answer; the connection stays open for more. */
    const uploadAll = async (options: { chunked: boolean; connection: 'keep-alive' | 'close' }) => {
      const framing = options.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${OVERSIZED}`;
      const connection = await SendThenRead.open(p!.url);
      try {
        await connection.send(
          `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ada.token}\r\n` +
            `Content-Type: multipart/form-data; boundary=x\r\nConnection: ${options.connection}\r\n${framing}\r\n\r\n`,
          OVERSIZED,
          options.chunked,
        );
        return { answer: await connection.read(), connection };
      } catch (error) {
        connection.close();
        throw error;
      }
    };
    const nothingKept = async () => {
      expect(readdirSync(join(p!.home, 'assets'), { recursive: true })).toEqual([]);
      expect((await p!.api('GET', '/assets', { token: ada.token })).body.assets).toEqual([]);
    };
    return { ada, host, uploadAll, nothingKept };
  }

  const refusal = {
    status: 413,
    body: {
      type: 'https://basecradle.com/docs/api#error-payload_too_large',
      title: 'Payload too large',
      status: 413,
      code: 'payload_too_large',
      detail: 'The file is larger than this platform accepts for an asset (1000 bytes).',
    },
  };

  it('with a Content-Length, is answered 413 after the client sent it all, and the connection still serves', async () => {
    const { ada, host, uploadAll, nothingKept } = await setUp();
    const { answer, connection } = await uploadAll({ chunked: false, connection: 'keep-alive' });
    try {
      expect(answer).toMatchObject(refusal);
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
      // The rest of the body was read to its end: the next request on this connection is answered.
      await connection.send(`GET /users/dashboard HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ada.token}\r\n\r\n`);
      expect((await connection.read()).status).toBe(200);
    } finally {
      connection.close();
    }
    await nothingKept();
  });

  it('sent chunked, or by a client that asked to close the connection, is answered 413 after the client sent it all', async () => {
    const { uploadAll, nothingKept } = await setUp();
    for (const options of [{ chunked: true, connection: 'keep-alive' }, { chunked: false, connection: 'close' }] as const) {
      const { answer, connection } = await uploadAll(options);
      connection.close();
      expect({ options, ...answer }).toMatchObject({ options, ...refusal });
    }
    await nothingKept();
  });
});
