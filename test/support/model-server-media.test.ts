// The media wires of the local model server refuse what the providers refuse, so a media test
// passes only when the real provider package sent the documented request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, openaiImage, startModelServer } from './model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

const auth = { authorization: 'Bearer test-key' };
const dataUri = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64')}`;

async function post(path: string, body: string | FormData, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { ...auth, ...headers }, body });
  return { status: response.status, body: (await response.json()) as any };
}

describe('model server media wires', () => {
  it('xAI image edits: multipart and masks are refused in xAI’s error shape; a JSON data-URI edit is answered', async () => {
    server.media.reset();
    const form = new FormData();
    form.append('model', 'grok-imagine-image');
    form.append('prompt', 'x');
    const multipart = await post('/xai/v1/images/edits', form);
    expect(multipart.status).toBe(400);
    expect(multipart.body.error).toMatch(/application\/json only/);
    const masked = await post('/xai/v1/images/edits', JSON.stringify({ model: 'm', prompt: 'x', image: { type: 'image_url', url: dataUri }, mask: { url: dataUri } }), { 'content-type': 'application/json' });
    expect(masked.body.error).toMatch(/no mask/);
    const linked = await post('/xai/v1/images/edits', JSON.stringify({ model: 'm', prompt: 'x', image: { type: 'image_url', url: 'https://example.com/a.png' } }), { 'content-type': 'application/json' });
    expect(linked.body.error).toMatch(/base64 data URI/);
    server.media.enqueue(openaiImage(Buffer.from('img')));
    const ok = await post('/xai/v1/images/edits', JSON.stringify({ model: 'm', prompt: 'x', image: { type: 'image_url', url: dataUri } }), { 'content-type': 'application/json' });
    expect(ok.status).toBe(200);
    expect(server.media.refused.map((entry) => entry.request.endpoint)).toEqual(['xai.images.edits', 'xai.images.edits', 'xai.images.edits']);
  });

  it('OpenAI: edits must be multipart with image files, generations JSON with a pixel size; no key, no answer', async () => {
    server.media.reset();
    const json = await post('/v1/images/edits', JSON.stringify({ model: 'gpt-image-2', prompt: 'x' }), { 'content-type': 'application/json' });
    expect(json.body.error.message).toMatch(/multipart\/form-data/);
    const badSize = await post('/v1/images/generations', JSON.stringify({ model: 'gpt-image-2', prompt: 'x', size: '16:9' }), { 'content-type': 'application/json' });
    expect(badSize.body.error.message).toMatch(/not WIDTHxHEIGHT/);
    const response = await fetch(`${server.url}/v1/images/generations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-image-2', prompt: 'x' }) });
    expect(((await response.json()) as any).error.message).toMatch(/Authorization/);
    expect(server.media.refused).toHaveLength(3);
  });
});
