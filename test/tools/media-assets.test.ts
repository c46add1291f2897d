// Peer media: listen, edit_image and code_attach take an asset a peer shared on the timeline (by
// its uuid), not only a workspace file. The asset is read through the agent's own platform client
// (the embedded platform, a real server), its type sniffed from its bytes, and sent to the
// provider (the local model server's media wires) as a workspace file would be.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BaseCradleClient } from '../../src/channel/client.ts';
import { platformSharedFiles } from '../../src/channel/shared-files.ts';
import { mediaModels } from '../../src/model/media.ts';
import { createCodeAttachTool } from '../../src/tools/builtin/code-attach.ts';
import { createOpenAIImageTools } from '../../src/tools/builtin/images.ts';
import { createListenTool } from '../../src/tools/builtin/listen.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { type ModelServer, openaiImage, openaiTranscription, startModelServer } from '../support/model-server.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { removeTempDirs, tempDir, toolContext } from './helpers.ts';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const WAV = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WAVEfmt '), Buffer.alloc(32)]);

let server: ModelServer;
let platform: TestPlatform;
let ana: { token: string; uuid: string };
let client: BaseCradleClient;
let timeline: string;
const env = { OPENAI_API_KEY: 'sk-test-media' };

beforeAll(async () => {
  server = await startModelServer();
  platform = await startTestPlatform();
  ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  timeline = await sharedTimeline(platform, ana as never, nova);
  client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: nova.token });
});
afterAll(async () => {
  await server.close();
  await platform.close();
  removeTempDirs();
});
beforeEach(() => server.media.reset());

/** A peer shares a file on the timeline, as the SDK's generic `file` (no type given). */
async function share(bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('asset[file]', new Blob([bytes]), name);
  const sent = await platform.api('POST', `/timelines/${timeline}/assets`, { token: ana.token, form });
  expect(sent.status, sent.text).toBe(201);
  return sent.body.asset.content.uuid as string;
}

async function run(tool: Tool, input: unknown) {
  const registry = new ToolRegistry({ policy: Policy.locked({ grants: [tool.name] }) });
  registry.register(tool);
  return registry.run(tool.name, input, toolContext());
}

const openai = () => mediaModels({ provider: 'openai', env, baseURL: server.openaiBaseURL });
const shared = () => platformSharedFiles(client);

describe('media tools take an asset shared on the timeline', () => {
  it('listen transcribes a voice note a peer shared, by its uuid', async () => {
    const note = await share(WAV, 'voice-note');
    server.media.enqueue(openaiTranscription('See you at noon.'));
    const result = await run(createListenTool({ workspace: tempDir(), media: openai(), shared: shared() }), { path: note });
    expect(result.ok, String(result.error)).toBe(true);
    expect(server.media.requests.find((r) => r.endpoint === 'openai.audio.transcriptions')!.files!.find((f) => f.field === 'file')!.bytes).toEqual(WAV);
    expect(result.output).toBe(`Transcript of asset ${note} ("voice-note"), quoted:\n"See you at noon."`);
  });

  it('edit_image sends a peer’s picture, by its uuid, as the source bytes', async () => {
    const picture = await share(PNG, 'cat');
    server.media.enqueue(openaiImage(PNG));
    const edit = createOpenAIImageTools({ workspace: tempDir(), media: openai(), shared: shared() }).find((t) => t.name === 'edit_image')!;
    const result = await run(edit, { prompt: 'make it blue', images: [picture] });
    expect(result.ok, String(result.error)).toBe(true);
    const request = server.media.requests.find((r) => r.endpoint === 'openai.images.edits')!;
    expect(request.files!.map((f) => [f.field, f.type, f.bytes])).toEqual([['image', 'image/png', PNG]]);
  });

  it('code_attach feeds a shared asset to the code sandbox', async () => {
    const table = await share(Buffer.from('a,b\n1,2\n'), 'sales.csv');
    const attached: Array<{ filename: string; data: string }> = [];
    const tool = createCodeAttachTool({ workspace: tempDir(), shared: shared(), attach: async (file) => (attached.push({ filename: file.filename, data: Buffer.from(file.data).toString() }), 'file-1') });
    const result = await run(tool, { path: table });
    expect(result.ok, String(result.error)).toBe(true);
    expect(attached).toEqual([{ filename: 'sales.csv', data: 'a,b\n1,2\n' }]);
    expect(result.output).toBe(`Attached asset ${table} ("sales.csv") (8 bytes) as sales.csv; the next code run can read it (file id file-1).`);
  });

  it('an asset of the wrong kind, one too large, one not there, or a uuid with no platform: a plain answer, nothing sent', async () => {
    const picture = await share(PNG, 'cat.png');
    const listen = createListenTool({ workspace: tempDir(), media: openai(), shared: shared() });
    expect((await run(listen, { path: picture })).output).toBe(`Nothing to listen to: asset ${picture} ("cat.png") is of type image/png; the audio file must be audio (mp3, wav, m4a, ogg, webm or flac). Nothing was sent.`);
    const small = createCodeAttachTool({ workspace: tempDir(), shared: shared(), maxBytes: 10, attach: async () => 'never' });
    expect((await run(small, { path: picture })).error).toBe(`code_attach failed: Asset ${picture} is ${PNG.length} bytes; a file for code_attach may be at most 10 bytes.`);
    const missing = '019e7750-66ee-7e50-9e54-3bf8c3d6a8f1';
    expect((await run(listen, { path: missing })).output).toMatch(new RegExp(`^Nothing to listen to: Asset ${missing}: The platform refused \\(not_found\\)`));
    const nowhere = createListenTool({ workspace: tempDir(), media: openai() });
    expect((await run(nowhere, { path: picture })).output).toBe(`Nothing to listen to: ${picture} is an asset uuid, and this agent is on no platform to read it from. Nothing was sent.`);
    expect(server.media.requests).toEqual([]);
  });
});
