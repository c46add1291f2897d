import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runAcx, tempDir } from '../support/cli.ts';
import { type ModelServer, openaiImage, respondByTurn, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * `acx run` as a user runs it, with generate_image granted: the model (OpenAI Responses on the
 * local wire) calls generate_image, the real @ai-sdk/openai image model asks the same local
 * server for the image, the file lands in the workspace, the model is shown the image in the
 * tool result, and the run logs one media line.
 */
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('run-png')]);

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

describe('acx run with a media tool granted (e2e)', { timeout: scaled(120_000) }, () => {
  it('generates, saves, shows the model its image, and logs one media line', async () => {
    const home = tempDir('acx-media-run-');
    const installed = await runAcx(['install', '--opt-in', 'generate_image'], { home, env: cleanEnv() });
    expect(installed.status, installed.stderr).toBe(0);
    server.setFallback(
      respondByTurn(({ turn, request }) => {
        if (turn === 0) return { toolCalls: [{ name: 'generate_image', input: { prompt: 'a cat', path: 'cat.png' } }] };
        const result = request.view.messages.flatMap((message) => message.toolResults ?? [])[0];
        return { text: `made it: ${result?.output.slice(0, 80)}` };
      }),
    );
    server.media.enqueue(openaiImage(PNG));
    const run = await runAcx(['run', 'default', 'draw a cat', '--model', 'openai:gpt-5.4-mini', '--yes'], {
      home,
      env: cleanEnv({ OPENAI_API_KEY: 'sk-test-run', OPENAI_BASE_URL: server.openaiBaseURL, ACX_LOG_LEVEL: 'info' }),
    });
    expect(run.status, run.stderr).toBe(0);
    expect(server.media.refused).toEqual([]);
    expect(server.media.requests.map((request) => request.endpoint)).toEqual(['openai.images.generations']);
    const workspace = join(home, 'agents/default/workspace');
    expect(existsSync(join(workspace, 'cat.png'))).toBe(true);
    expect(readFileSync(join(workspace, 'cat.png'))).toEqual(PNG);
    expect(readdirSync(workspace)).toEqual(['cat.png']);
    expect(run.stdout).toContain('made it: Generated an image with gpt-image-2: saved cat.png (image/png');
    // The second model request carries the image in generate_image's result (the Responses wire's input_image).
    const second = server.requests[1]!;
    expect(JSON.stringify(second.body)).toContain(PNG.toString('base64'));
    expect(run.stderr.split('\n').filter((line) => /\bmedia provider=/.test(line))).toEqual([expect.stringMatching(/INFO media provider=openai kind=image\.generate model=gpt-image-2 duration=\d+\.\d\ds$/)]);
    expect(run.stderr).not.toContain('sk-test-run');
  });
});
