// code_execution and the app's wiring of the built-ins: OpenAI's code interpreter through the
// real AI SDK provider and the local wire (files in with code_attach through the Files API, what
// a run wrote back into the workspace), and resolved-config on every provider showing the
// built-ins off by default and on only when granted.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assembleBuiltins, timelineOutputSink } from '../../src/app/builtins.ts';
import { BaseCradleClient } from '../../src/channel/client.ts';
import { startTestPlatform } from '../support/platform.ts';
import { installConfigHome } from '../../src/app/install.ts';
import type { ResolvedSettings } from '../../src/app/settings.ts';
import { resolvedConfig } from '../../src/frontends/cli/commands/resolved-config.ts';
import { resolveModel } from '../../src/model/providers.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { echoTool, OPENAI_KEY, rig } from '../engine/helpers.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

/** The settings assembleBuiltins reads: the chosen model and the config home. */
function settingsFor(provider: string, surface: 'responses' | 'chat', configHome: string): ResolvedSettings {
  return { model: { provider, surface, baseURL: server.openaiBaseURL, modelId: 'test-model' }, configHome } as unknown as ResolvedSettings;
}

describe('code_execution on OpenAI: files in and out of the code interpreter', () => {
  it('code_attach uploads a workspace file into the next run; the run\'s source and the files it wrote land in the workspace', async () => {
    const workspace = temp('acx-code-ws-');
    writeFileSync(join(workspace, 'sales.csv'), 'month,total\njan,3\n');
    const logger = createMemoryLogger('debug');
    const assembled = await assembleBuiltins({
      settings: settingsFor('openai', 'responses', temp('acx-code-home-')),
      grants: new Set(['code_execution', 'code_attach']),
      workspace,
      logger,
      env: { OPENAI_API_KEY: OPENAI_KEY },
    });
    expect(assembled.availability.active.map((b) => b.name)).toEqual(['code_execution']);
    expect(assembled.tools.map((t) => t.name)).toEqual(['code_attach']);
    server.enqueue(
      { toolCalls: [{ name: 'code_attach', input: { path: 'sales.csv' } }] },
      {
        text: 'The total is 3; the chart is in chart.txt.',
        hosted: {
          codeInterpreter: {
            code: 'import pandas as pd\nprint(pd.read_csv("sales.csv").total.sum())',
            containerId: 'cntr_1',
            logs: '3\n',
            files: [
              { id: 'cfile_in', path: '/mnt/data/sales.csv', content: 'month,total\njan,3\n', source: 'user' },
              { id: 'cfile_out', path: '/mnt/data/chart.txt', content: 'jan ###' },
            ],
          },
        },
      },
    );
    const model = await resolveModel({ spec: 'openai:test-model', env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.openaiBaseURL } });
    const { agent } = rig(model, { harness: { builtins: assembled.builtins! }, agent: { tools: [...assembled.tools, echoTool()] } });
    const result = await agent.generate({ prompt: 'sum the sales' });

    // In: the file went up through the Files API and joined the next run's container.
    expect(server.uploads.map((u) => [u.filename, u.purpose, u.content.toString()])).toEqual([['sales.csv', 'assistants', 'month,total\njan,3\n']]);
    const interpreter = (n: number) => server.requests[n]!.body.tools.find((t: { type: string }) => t.type === 'code_interpreter');
    expect(interpreter(0).container.file_ids).toEqual([]);
    expect(interpreter(1).container.file_ids).toEqual(['file-1']);
    // Out: the executed source and the file the code wrote (not the attached input) are in the workspace.
    expect(readFileSync(join(workspace, 'code-output', 'ci_2.py'), 'utf8')).toMatch(/read_csv\("sales.csv"\)/);
    expect(readFileSync(join(workspace, 'code-output', 'chart.txt'), 'utf8')).toBe('jan ###');
    expect(existsSync(join(workspace, 'code-output', 'sales.csv'))).toBe(false);
    expect(result.text).toBe('The total is 3; the chart is in chart.txt.\n\nFiles:\n- code-output/ci_2.py\n- code-output/chart.txt');
    expect(logger.lines.join('\n')).not.toContain(OPENAI_KEY);
  });

  it('on a timeline agent the outputs are posted as assets, once, even when the same run is kept again', async () => {
    const platform = await startTestPlatform();
    try {
      const owner = platform.user('owner');
      const created = await platform.api('POST', '/timelines', { token: owner.token, json: { timeline: { name: 'Lab' } } });
      const timeline = created.body.timeline.uuid as string;
      const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: owner.token });
      const sink = timelineOutputSink(client, timeline);
      const run = { hosted: { codeInterpreter: { code: 'open("/mnt/data/r.txt","w").write("ok")', containerId: 'cntr_t', files: [{ id: 'cf_1', path: '/mnt/data/r.txt', content: 'ok' }] } } };
      server.enqueue({ text: 'Done.', ...run });
      const assembled = await assembleBuiltins({
        settings: settingsFor('openai', 'responses', temp('acx-code-home-')),
        grants: new Set(['code_execution', 'code_attach']),
        workspace: temp('acx-code-ws-'),
        logger: createMemoryLogger('debug'),
        env: { OPENAI_API_KEY: OPENAI_KEY },
        keepOutput: sink,
      });
      const model = await resolveModel({ spec: 'openai:test-model', env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.openaiBaseURL } });
      const { agent } = rig(model, { harness: { builtins: assembled.builtins! } });
      const result = await agent.generate({ prompt: 'write r.txt' });
      const assets = await client.assets.list({ timeline }).toArray();
      expect(assets.map((asset) => asset.content.file?.filename ?? asset.content.uuid).sort()).toEqual(['ci_1.py', 'r.txt']);
      expect(result.text).toMatch(/Files:\n- asset [0-9a-f-]{36} \(ci_1\.py\)\n- asset [0-9a-f-]{36} \(r\.txt\)$/);
      // Kept again (a resumed turn): the same call id and name return the first asset, no second post.
      await sink({ name: 'r.txt', data: 'ok', callId: 'ci_1' });
      expect(await client.assets.list({ timeline }).toArray()).toHaveLength(2);
    } finally {
      await platform.close();
    }
  });

  it('code_attach refuses a path outside the workspace', async () => {
    const workspace = temp('acx-code-ws-');
    const assembled = await assembleBuiltins({
      settings: settingsFor('openai', 'responses', temp('acx-code-home-')),
      grants: new Set(['code_execution', 'code_attach']),
      workspace,
      logger: createMemoryLogger('debug'),
      env: { OPENAI_API_KEY: OPENAI_KEY },
    });
    const attach = assembled.tools[0]!;
    await expect(Promise.resolve(attach.execute!({ path: '../../etc/passwd' }, {} as never))).rejects.toThrow(/workspace|\.\./i);
    expect(server.uploads).toEqual([]);
  });

  it('on xAI: code execution runs, code_attach self-excludes with the reason', async () => {
    const assembled = await assembleBuiltins({
      settings: settingsFor('xai', 'responses', temp('acx-code-home-')),
      grants: new Set(['code_execution', 'code_attach']),
      workspace: temp('acx-code-ws-'),
      logger: createMemoryLogger('debug'),
      env: {},
    });
    expect(assembled.availability.active.map((b) => b.name)).toEqual(['code_execution']);
    expect(assembled.tools).toEqual([]);
    expect(assembled.skipped).toEqual([{ name: 'code_attach', reason: expect.stringMatching(/xai's code execution takes no input files/) }]);
  });
});

describe('acx resolved-config: the built-ins are off by default on every provider', () => {
  const PROVIDERS = ['openai:gpt-test', 'xai:grok-test', 'openrouter:z-ai/glm-test', 'anthropic:claude-test', 'google:gemini-test', 'ollama:llama-test'];

  async function report(spec: string, grants: string[], extra: Record<string, unknown> = {}) {
    const configHome = temp('acx-rc-home-');
    mkdirSync(join(configHome, 'tools'), { recursive: true });
    for (const grant of grants) writeFileSync(join(configHome, 'tools', `${grant}.enabled`), '');
    return (await resolvedConfig(undefined, { model: spec, configHome, home: temp('acx-rc-state-'), ...extra })) as Record<string, any>;
  }

  it('with no grant: builtins [] and opt_in_tools [] on each provider', async () => {
    for (const spec of PROVIDERS) {
      const config = await report(spec, []);
      expect(config.builtins, spec).toEqual([]);
      expect(config.opt_in_tools, spec).toEqual([]);
      expect(config.tools, spec).not.toContain('code_attach');
    }
  });

  it('granted: each provider lights up what it runs, reports the grant stems, and skips the rest with a reason', async () => {
    const granted = ['web_search', 'x_search', 'code_execution'];
    const openai = await report('openai:gpt-test', granted);
    expect(openai.builtins).toEqual(['web_search', 'code_execution']);
    expect(openai.builtin_provider_tools).toEqual(['openai.web_search', 'openai.code_interpreter']);
    expect(openai.tools).toContain('code_attach');
    expect(openai.opt_in_tools).toEqual(['code_execution', 'web_search']);
    expect(openai.skipped.find((s: { name: string }) => s.name === 'x_search').reason).toMatch(/no server-side x_search/);

    const chat = await report('openai:gpt-test', granted, { surface: 'chat' });
    expect(chat.builtins).toEqual([]);
    expect(chat.skipped.find((s: { name: string }) => s.name === 'web_search').reason).toMatch(/responses surface/);

    const xai = await report('xai:grok-test', granted);
    expect(xai.builtins).toEqual(['web_search', 'x_search', 'code_execution']);
    expect(xai.opt_in_tools).toEqual(['code_execution', 'web_search', 'x_search']);
    expect(xai.tools).not.toContain('code_attach');

    const openrouter = await report('openrouter:z-ai/glm-test', granted);
    expect(openrouter.builtins).toEqual(['web_search']);
    expect(openrouter.search_params).toBeNull();
    expect(openrouter.skipped.find((s: { name: string }) => s.name === 'code_attach').reason).toMatch(/not active here/);

    const onACP = await report('openai:gpt-test', granted, { harness: 'codex' });
    expect(onACP.builtins).toEqual([]);
    expect(onACP.skipped.find((s: { name: string }) => s.name === 'web_search').reason).toMatch(/codex harness runs its own model calls/);

    const anthropic = await report('anthropic:claude-test', granted);
    expect(anthropic.builtins).toEqual([]);
    expect(anthropic.opt_in_tools).toEqual([]);
    expect(anthropic.skipped.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining(['web_search', 'x_search', 'code_execution', 'code_attach']));
  });

  it('acx install --opt-in code_execution grants the built-in plus code_attach, and never writes search_params.json', async () => {
    const configHome = temp('acx-rc-home-');
    installConfigHome({ configHome, version: '0.0.0-test', optIn: ['code_execution,web_search'], logger: createMemoryLogger('debug') });
    expect(existsSync(join(configHome, 'search_params.json'))).toBe(false);
    const config = (await resolvedConfig(undefined, { model: 'openai:gpt-test', configHome, home: temp('acx-rc-state-') })) as Record<string, any>;
    expect(config.builtins).toEqual(['web_search', 'code_execution']);
    expect(config.tools).toContain('code_attach');
    expect(config.opt_in_tools).toEqual(['code_execution', 'web_search']);
  });

  it('reports search_params.json verbatim where OpenRouter sends it', async () => {
    const configHome = temp('acx-rc-home-');
    mkdirSync(join(configHome, 'tools'), { recursive: true });
    writeFileSync(join(configHome, 'tools', 'web_search.enabled'), '');
    const params = { engine: 'exa', max_results: 3, some_future_knob: { nested: true } };
    writeFileSync(join(configHome, 'search_params.json'), JSON.stringify(params));
    const config = (await resolvedConfig(undefined, { model: 'openrouter:z-ai/glm-test', configHome, home: temp('acx-rc-state-') })) as Record<string, any>;
    expect(config.search_params).toEqual(params);
  });

  it('a malformed search_params.json fails resolved-config with the reason, on OpenRouter with web_search granted', async () => {
    const configHome = temp('acx-rc-home-');
    mkdirSync(join(configHome, 'tools'), { recursive: true });
    writeFileSync(join(configHome, 'tools', 'web_search.enabled'), '');
    writeFileSync(join(configHome, 'search_params.json'), '{ "engine": "exa", ');
    await expect(resolvedConfig(undefined, { model: 'openrouter:z-ai/glm-test', configHome, home: temp('acx-rc-state-') })).rejects.toThrow(/search_params\.json is not valid JSON/);
  });
});
