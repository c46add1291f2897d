import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { composeCharter } from '../config/charter.ts';
import { reconcileIfUpgraded } from '../config/install.ts';
import type { ResolvedSettings } from '../config/settings.ts';
import { createSqliteMemoryProvider } from '../memory/provider.ts';
import { createRecordingModel, createReplayModel } from '../model/cassette.ts';
import { fromLanguageModel, type ResolvedModel, resolveModel } from '../model/providers.ts';
import type { Tool } from '../tools/tool.ts';
import { ACX_VERSION } from '../cli/version.ts';
import { ConfigError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { createDispatchTool } from './dispatch.ts';
import { createEngineHarness } from './engine-harness.ts';
import { HarnessAgent } from './harness-agent.ts';
import { composeInstructions } from './skills.ts';
import { assembleToolset, type Toolset } from './toolset.ts';

/**
 * Turns resolved settings into a running agent: the model (real, recorded or replayed), the
 * memory provider, the tools (policy-checked), the standing instructions, and the native
 * engine harness.
 */
export interface PreparedAgent {
  agent: HarnessAgent;
  settings: ResolvedSettings;
  model: ResolvedModel;
  toolset: Toolset;
  instructions: string;
  close(): Promise<void>;
}

export async function buildModel(settings: ResolvedSettings): Promise<ResolvedModel> {
  if (settings.replay) {
    return fromLanguageModel(createReplayModel(settings.replay), {
      provider: settings.model.provider.split('.')[0]!,
      ...(settings.model.cacheMode ? { cacheMode: settings.model.cacheMode } : {}),
    });
  }
  const resolved = await resolveModel({
    spec: settings.model.spec!,
    ...(settings.model.surface ? { surface: settings.model.surface } : {}),
    ...(settings.model.baseURL ? { baseURL: settings.model.baseURL } : {}),
  });
  if (!settings.record) return resolved;
  return { ...resolved, model: createRecordingModel(resolved.model, settings.record) };
}

/** Seed memory records from the agent directory: memory/*.json holding {key, value} or arrays of them. */
export function seedRecords(memoryDir: string | undefined): Array<{ key: string; value: string }> {
  if (!memoryDir || !existsSync(memoryDir)) return [];
  const records: Array<{ key: string; value: string }> = [];
  for (const file of readdirSync(memoryDir).filter((f) => f.endsWith('.json')).sort()) {
    const path = join(memoryDir, file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`);
    }
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
      const record = item as { key?: unknown; value?: unknown };
      if (typeof record.key !== 'string' || typeof record.value !== 'string') {
        throw new ConfigError(`${path}: each memory record needs string "key" and "value".`);
      }
      records.push({ key: record.key, value: record.value });
    }
  }
  return records;
}

/** The standing instructions: the agent directory's prompts, else the config home's charter. */
export function standingInstructions(settings: ResolvedSettings, logger: Logger): string {
  const dir = settings.agentDir;
  if (dir) return composeInstructions({ systemPrompt: dir.systemPrompt, initialize: dir.initialize, skills: dir.skills });
  return composeCharter(settings.configHome, { logger }).text;
}

export async function prepareAgent(settings: ResolvedSettings, options: { logger: Logger }): Promise<PreparedAgent> {
  const { logger } = options;
  reconcileIfUpgraded({ configHome: settings.configHome, version: ACX_VERSION, logger });
  const model = await buildModel(settings);
  const memory = createSqliteMemoryProvider({ path: settings.memoryPath, logger });
  for (const record of seedRecords(settings.agentDir?.memoryDir)) {
    if (!memory.store.get(record.key)) memory.store.write(record.key, record.value, { source: 'agent-seed' });
  }
  const instructions = standingInstructions(settings, logger);
  const harnessOptions = {
    model,
    journalPath: settings.journalPath,
    ...(settings.contextTokens !== null ? { contextTokens: settings.contextTokens } : {}),
    params: settings.modelParams,
    retries: settings.retries,
    memory,
    logger,
  };
  const dispatchHarness = createEngineHarness({ ...harnessOptions, maxSteps: Math.max(1, Math.floor(settings.maxSteps / 2)) });
  const toolset = await assembleToolset({
    settings,
    memory,
    logger,
    connectMcp: true,
    dispatch: (tools: () => readonly Tool[]) =>
      createDispatchTool({
        harness: dispatchHarness,
        tools,
        instructions,
        agentId: settings.agent.id,
      }),
  });
  const harness = createEngineHarness({ ...harnessOptions, maxSteps: settings.maxSteps });
  const agent = new HarnessAgent({
    harness,
    id: settings.agent.id,
    instructions: [instructions, ...toolset.notices].join('\n\n'),
    tools: toolset.tools,
    permissionMode: settings.permissionMode,
    speech: settings.speech,
  });
  return {
    agent,
    settings,
    model,
    toolset,
    instructions,
    async close() {
      await toolset.close();
      await harness.close?.();
      await dispatchHarness.close?.();
      await memory.close();
    },
  };
}
