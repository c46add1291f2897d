// The media tools through the real AI SDK providers (@ai-sdk/openai, @ai-sdk/xai) against the
// local model server's media wires, which refuse any request that breaks the provider's
// documented shape. The workspace is a real directory; the logs are the real logger's lines.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mediaModels } from '../../src/model/media.ts';
import { createGrokImageTools, createOpenAIImageTools } from '../../src/tools/builtin/images.ts';
import { createListenTool } from '../../src/tools/builtin/listen.ts';
import { createGrokVideoTool } from '../../src/tools/builtin/video.ts';
import { createViewTool } from '../../src/tools/builtin/view.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/tool.ts';
import {
  type ModelServer,
  openaiError,
  openaiImage,
  openaiTranscription,
  startModelServer,
  xaiImage,
  xaiVideoDone,
  xaiVideoFailed,
  xaiVideoPending,
  xaiVideoStarted,
} from '../support/model-server.ts';
import { removeTempDirs, tempDir, toolContext } from './helpers.ts';

// Real file headers: the tools sniff types from bytes, as the providers do.
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('png-body')]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('jpeg-body')]);
const WAV = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WAVEfmt '), Buffer.alloc(32)]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(16)]);

let server: ModelServer;
let workspace: string;
const env = { OPENAI_API_KEY: 'sk-test-media', XAI_API_KEY: 'xai-test-media' };

beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
  removeTempDirs();
});
beforeEach(() => {
  workspace = tempDir('acx-media-');
  server.media.reset();
});

const openai = () => mediaModels({ provider: 'openai', env, baseURL: server.openaiBaseURL });
const xai = () => mediaModels({ provider: 'xai', env, baseURL: server.xaiBaseURL });
const byName = (tools: Tool[], name: string) => tools.find((tool) => tool.name === name)!;

/** Runs a tool as the engine would (validated by its schema) and returns what the model reads. */
async function run(tool: Tool, input: unknown) {
  const registry = new ToolRegistry({ policy: Policy.locked({ grants: [tool.name] }) });
  registry.register(tool);
  const context = toolContext();
  const result = await registry.run(tool.name, input, context);
  return { ...result, logs: context.logger.lines };
}

function textOf(output: unknown): string {
  const parts = (output as { content?: Array<{ type: string; text?: string }> }).content;
  return parts ? parts.filter((part) => part.type === 'text').map((part) => part.text).join('\n') : String(output);
}

describe('generate_image and edit_image (OpenAI images through @ai-sdk/openai)', () => {
  it('generate_image sends the full option surface as JSON and saves the image as a new workspace file', async () => {
    server.media.enqueue(openaiImage(JPEG, { revisedPrompt: 'a ginger cat, watercolor' }));
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'generate_image');
    const result = await run(tool, { prompt: 'a cat', size: '1536x1024', quality: 'high', background: 'opaque', output_format: 'jpeg', output_compression: 80, path: 'art/cat.png' });
    expect(result.ok, String(result.error)).toBe(true);
    expect(server.media.refused).toEqual([]);
    const [request] = server.media.requests;
    expect(request!.endpoint).toBe('openai.images.generations');
    expect(request!.headers.authorization).toBe('Bearer sk-test-media');
    expect(request!.json).toMatchObject({ model: 'gpt-image-2', prompt: 'a cat', n: 1, size: '1536x1024', quality: 'high', background: 'opaque', output_format: 'jpeg', output_compression: 80 });
    // The extension follows the format the image came back in.
    expect(fs.readFileSync(path.join(workspace, 'art/cat.jpg'))).toEqual(JPEG);
    expect(fs.existsSync(path.join(workspace, 'art/cat.png'))).toBe(false);
    expect(textOf(result.output)).toContain('saved art/cat.jpg (image/jpeg');
    expect(textOf(result.output)).toContain('a ginger cat, watercolor');
    // The model sees what it made, through the vision gate.
    expect((result.output as { content: Array<{ type: string }> }).content.some((part) => part.type === 'image')).toBe(true);
    // One media line; OpenAI states no cost, so there is no cost= field.
    const media = result.logs.filter((line) => / media /.test(line) || /\bmedia\b.*kind=/.test(line));
    expect(media).toHaveLength(1);
    expect(media[0]).toMatch(/provider=openai kind=image\.generate model=gpt-image-2 duration=\d+\.\d\ds/);
    expect(media[0]).not.toMatch(/cost=/);
    // No temporary file is left behind.
    expect(fs.readdirSync(path.join(workspace, 'art'))).toEqual(['cat.jpg']);
  });

  it('refuses combinations OpenAI refuses, before anything is billed', async () => {
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'generate_image');
    const png = await run(tool, { prompt: 'x', output_compression: 50 });
    expect(png.ok).toBe(false);
    expect(png.error).toMatch(/output_compression applies to jpeg and webp only/);
    const transparentJpeg = await run(tool, { prompt: 'x', background: 'transparent', output_format: 'jpeg' });
    expect(transparentJpeg.error).toMatch(/transparent background needs png or webp/);
    expect(server.media.requests).toEqual([]);
  });

  it('edit_image sends each source and the mask as multipart files (bytes, not links)', async () => {
    fs.mkdirSync(path.join(workspace, 'in'));
    fs.writeFileSync(path.join(workspace, 'in/a.png'), PNG);
    fs.writeFileSync(path.join(workspace, 'in/b.jpg'), JPEG);
    fs.writeFileSync(path.join(workspace, 'in/mask.png'), PNG);
    server.media.enqueue(openaiImage(PNG));
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'edit_image');
    const result = await run(tool, { prompt: 'make it blue', images: ['in/a.png', 'in/b.jpg'], mask: 'in/mask.png', quality: 'low' });
    expect(result.ok, String(result.error)).toBe(true);
    expect(server.media.refused).toEqual([]);
    const request = server.media.requests[0]!;
    expect(request.endpoint).toBe('openai.images.edits');
    expect(request.fields).toMatchObject({ model: ['gpt-image-2'], prompt: ['make it blue'], quality: ['low'] });
    const images = request.files!.filter((file) => file.field === 'image[]');
    expect(images.map((file) => [file.type, file.bytes])).toEqual([
      ['image/png', PNG],
      ['image/jpeg', JPEG],
    ]);
    expect(request.files!.filter((file) => file.field === 'mask').map((file) => file.bytes)).toEqual([PNG]);
    expect(result.logs.some((line) => /kind=image\.edit /.test(line))).toBe(true);
    const saved = /saved (media\/edit-\S+\.png)/.exec(textOf(result.output))![1]!;
    expect(fs.readFileSync(path.join(workspace, saved))).toEqual(PNG);
  });

  it('edit_image reads sources only inside the workspace and only images', async () => {
    const outside = tempDir('acx-media-outside-');
    fs.writeFileSync(path.join(outside, 'secret.png'), PNG);
    fs.symlinkSync(path.join(outside, 'secret.png'), path.join(workspace, 'link.png'));
    fs.writeFileSync(path.join(workspace, 'notes.png'), 'just text');
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'edit_image');
    expect((await run(tool, { prompt: 'x', images: ['../secret.png'] })).error).toMatch(/contains "\.\."/);
    expect((await run(tool, { prompt: 'x', images: [path.join(outside, 'secret.png')] })).error).toMatch(/outside the workspace/);
    expect((await run(tool, { prompt: 'x', images: ['link.png'] })).error).toMatch(/Refused|outside/);
    expect((await run(tool, { prompt: 'x', images: ['notes.png'] })).error).toMatch(/not a media file/);
    expect(server.media.requests).toEqual([]);
  });

  it("relays OpenAI's own error message and logs the failed call", async () => {
    server.media.enqueue(openaiError(400, 'Your request was rejected as a result of our safety system.', 'moderation_blocked'));
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'generate_image');
    const result = await run(tool, { prompt: 'something' });
    expect(result.ok).toBe(false);
    expect(result.error).toContain('Your request was rejected as a result of our safety system.');
    expect(result.logs.some((line) => /WARN.*media.*outcome=error/.test(line))).toBe(true);
    // Nothing was written.
    expect(fs.existsSync(path.join(workspace, 'media'))).toBe(false);
  });

  it('is never retried by the SDK: a server error after the request may still have been billed', async () => {
    server.media.enqueue(openaiError(500, 'The server had an error while processing your request.'), openaiImage(PNG));
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'generate_image');
    const result = await run(tool, { prompt: 'a cat' });
    expect(result.error).toContain('The server had an error while processing your request.');
    expect(server.media.requests).toHaveLength(1);
    expect(server.media.queued()).toBe(1);
  });

  it('never writes over an existing file', async () => {
    fs.writeFileSync(path.join(workspace, 'keep.png'), 'mine');
    server.media.enqueue(openaiImage(PNG));
    const tool = byName(createOpenAIImageTools({ workspace, media: openai() }), 'generate_image');
    const result = await run(tool, { prompt: 'a cat', path: 'keep.png' });
    expect(result.error).toMatch(/keep\.png already exists/);
    expect(fs.readFileSync(path.join(workspace, 'keep.png'), 'utf8')).toBe('mine');
    expect(fs.readdirSync(workspace)).toEqual(['keep.png']);
  });
});

describe('grok_generate_image and grok_edit_image (xAI images through @ai-sdk/xai)', () => {
  it('generates by aspect ratio and resolution, and the media line carries the cost xAI states', async () => {
    server.media.enqueue(xaiImage(JPEG, { costInUsdTicks: 700_000_000 }));
    const tool = byName(createGrokImageTools({ workspace, media: xai() }), 'grok_generate_image');
    const result = await run(tool, { prompt: 'a fox', aspect_ratio: '16:9', resolution: '2k' });
    expect(result.ok, String(result.error)).toBe(true);
    expect(server.media.refused).toEqual([]);
    expect(server.media.requests[0]!.json).toMatchObject({ model: 'grok-imagine-image', prompt: 'a fox', n: 1, aspect_ratio: '16:9', resolution: '2k', response_format: 'b64_json' });
    expect(result.logs.find((line) => /kind=image\.generate/.test(line))).toMatch(/provider=xai kind=image\.generate model=grok-imagine-image duration=\S+ cost=0\.07/);
    expect(textOf(result.output)).toContain('$0.07');
  });

  it('edits with JSON: one source in image, a composite in images, each a base64 data URI; no mask offered', async () => {
    fs.writeFileSync(path.join(workspace, 'a.png'), PNG);
    fs.writeFileSync(path.join(workspace, 'b.jpg'), JPEG);
    const tool = byName(createGrokImageTools({ workspace, media: xai() }), 'grok_edit_image');
    server.media.enqueue(xaiImage(PNG), xaiImage(PNG));
    expect((await run(tool, { prompt: 'recolor', images: ['a.png'] })).ok).toBe(true);
    expect((await run(tool, { prompt: 'combine', images: ['a.png', 'b.jpg'] })).ok).toBe(true);
    expect(server.media.refused).toEqual([]);
    const [one, two] = server.media.requests;
    expect(one!.headers['content-type']).toMatch(/^application\/json/);
    expect(one!.json.image).toEqual({ type: 'image_url', url: `data:image/png;base64,${PNG.toString('base64')}` });
    expect(two!.json.images.map((source: { url: string }) => source.url.slice(0, 16))).toEqual(['data:image/png;b', 'data:image/jpeg;']);
    // The asymmetry is in the schema: a mask is not an argument grok_edit_image takes.
    const masked = await run(tool, { prompt: 'x', images: ['a.png'], mask: 'a.png' });
    expect(masked.error).toMatch(/Invalid arguments/);
    expect((await run(tool, { prompt: 'x', images: ['a.png', 'a.png', 'a.png', 'a.png'] })).error).toMatch(/Invalid arguments/);
  });
});

describe('grok_generate_video (xAI video through experimental_generateVideo)', () => {
  it('submits, polls until done, downloads the clip, saves it, and logs the cost from the done poll', async () => {
    fs.writeFileSync(path.join(workspace, 'still.png'), PNG);
    const clip = server.media.serveFile('/files/clip.mp4', MP4, 'video/mp4');
    server.media.enqueue(xaiVideoStarted('vid-1'), xaiVideoPending(10), xaiVideoPending(60), xaiVideoDone(clip, { costInUsdTicks: 21_000_000_000 }));
    const tool = createGrokVideoTool({ workspace, media: xai(), pollIntervalMs: 1 });
    const result = await run(tool, { prompt: 'the still comes alive', image: 'still.png', duration: 6, aspect_ratio: '16:9', resolution: '720p' });
    expect(result.ok, String(result.error)).toBe(true);
    expect(server.media.refused).toEqual([]);
    const [start, ...polls] = server.media.requests;
    expect(start!.endpoint).toBe('xai.videos.generations');
    expect(start!.json).toMatchObject({ model: 'grok-imagine-video', prompt: 'the still comes alive', duration: 6, aspect_ratio: '16:9', resolution: '720p' });
    expect(start!.json.image.url).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
    // The submit carries the call's idempotency key.
    expect(start!.headers['idempotency-key']).toBe('session-1:call-1');
    expect(polls.map((poll) => [poll.endpoint, poll.requestId])).toEqual([
      ['xai.videos.status', 'vid-1'],
      ['xai.videos.status', 'vid-1'],
      ['xai.videos.status', 'vid-1'],
    ]);
    const saved = /saved (media\/video-\S+\.mp4)/.exec(textOf(result.output))![1]!;
    expect(fs.readFileSync(path.join(workspace, saved))).toEqual(MP4);
    expect(result.logs.find((line) => /kind=video\.generate/.test(line))).toMatch(/provider=xai kind=video\.generate model=grok-imagine-video duration=\S+ cost=2\.1$/);
  });

  it("relays xAI's own failure message", async () => {
    server.media.enqueue(xaiVideoStarted('vid-2'), xaiVideoFailed('The prompt violates the usage policy.'));
    const result = await run(createGrokVideoTool({ workspace, media: xai(), pollIntervalMs: 1 }), { prompt: 'x' });
    expect(result.ok).toBe(false);
    expect(result.error).toContain('The prompt violates the usage policy.');
  });

  it('gives up with a clear timeout when the clip never finishes', async () => {
    server.media.enqueue(xaiVideoStarted('vid-3'));
    for (let i = 0; i < 500; i++) server.media.enqueue(xaiVideoPending());
    const result = await run(createGrokVideoTool({ workspace, media: xai(), pollIntervalMs: 5, timeoutMs: 150 }), { prompt: 'x' });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/xAI had not finished the grok-imagine-video clip after 0\.15 s of polling; acx stopped waiting\. The job may still finish \(and be billed\) at xAI\./);
    expect(result.logs.some((line) => /WARN.*media provider=xai kind=video\.generate .*outcome=error/.test(line))).toBe(true);
  });
});

describe('listen (OpenAI transcription through transcribe)', () => {
  it('sends the audio file as multipart and returns the transcript, quoted', async () => {
    fs.writeFileSync(path.join(workspace, 'note.wav'), WAV);
    server.media.enqueue(openaiTranscription('Meet me at noon.', { language: 'english', duration: 2.5 }));
    const result = await run(createListenTool({ workspace, media: openai() }), { path: 'note.wav' });
    expect(result.ok, String(result.error)).toBe(true);
    const request = server.media.requests.find((r) => r.endpoint === 'openai.audio.transcriptions')!;
    expect(request.fields!.model).toEqual(['gpt-4o-transcribe']);
    expect(request.files!.find((file) => file.field === 'file')!.bytes).toEqual(WAV);
    expect(result.output).toBe('Transcript of note.wav (language en, 2.5 s), quoted:\n"Meet me at noon."');
    expect(result.logs.find((line) => /kind=audio\.transcribe/.test(line))).toMatch(/provider=openai kind=audio\.transcribe model=gpt-4o-transcribe/);
  });

  it('a file that is not audio comes back as a note, and nothing is sent; a path outside is an error', async () => {
    fs.writeFileSync(path.join(workspace, 'pic.png'), PNG);
    const listen = createListenTool({ workspace, media: openai() });
    const result = await run(listen, { path: 'pic.png' });
    expect(result.ok).toBe(true);
    expect(result.output).toMatch(/^Nothing to listen to: pic\.png is of type image\/png; the audio file must be audio .* Nothing was sent\.$/);
    expect((await run(listen, { path: '../x.wav' })).error).toMatch(/contains "\.\."/);
    expect(server.media.requests).toEqual([]);
  });
});

describe('view (workspace images through the vision gate)', () => {
  it('returns a workspace image as an image part, and refuses what is not an image or not inside', async () => {
    fs.writeFileSync(path.join(workspace, 'chart.png'), PNG);
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'text');
    const view = createViewTool({ workspace });
    const shown = await run(view, { path: 'chart.png' });
    expect(shown.output).toEqual({
      content: [
        { type: 'text', text: `chart.png (image/png, ${PNG.length} bytes):` },
        { type: 'image', data: PNG.toString('base64'), mediaType: 'image/png' },
      ],
    });
    expect((await run(view, { path: 'a.txt' })).error).toMatch(/not a media file/);
    expect((await run(view, { path: '../x.png' })).error).toMatch(/contains "\.\."/);
  });
});
