import { isMediaProvider, mediaModels, type MediaProviderId } from '../model/media.ts';
import type { PolicyTool } from '../tools/policy.ts';
import type { SharedFiles } from '../tools/builtin/media-files.ts';
import type { SkippedTool } from '../tools/registry.ts';
import type { GuardedDirectory } from '../tools/sandbox/protected.ts';
import { createGrokImageTools, createOpenAIImageTools } from '../tools/builtin/images.ts';
import { createListenTool } from '../tools/builtin/listen.ts';
import { createGrokVideoTool } from '../tools/builtin/video.ts';
import { createXaiBalanceTool } from '../tools/builtin/xai-balance.ts';

/**
 * The media tools an agent is offered, and xAI's account balance: those its model's provider can run. Each is opt-in, so
 * the Policy still loads one only when granted; the provider decides only availability. A
 * granted tool its provider cannot run is reported as skipped, with the provider it needs.
 *
 * Models are the provider's own media models (override with ACX_IMAGE_MODEL,
 * ACX_TRANSCRIPTION_MODEL, ACX_XAI_IMAGE_MODEL, ACX_XAI_VIDEO_MODEL); the key and base URL are
 * the chat model's (OPENAI_API_KEY / XAI_API_KEY, *_BASE_URL), read at the first call.
 */
const MEDIA_TOOL_PROVIDER: Record<string, MediaProviderId> = {
  generate_image: 'openai',
  edit_image: 'openai',
  listen: 'openai',
  grok_generate_image: 'xai',
  grok_edit_image: 'xai',
  grok_generate_video: 'xai',
  xai_account_balance: 'xai',
};

export interface MediaToolsetOptions {
  /** The agent model's provider id (`openai`, `xai`, …); null when no model is selected. */
  provider: string | null;
  baseURL?: string | null;
  workspace: string;
  /** The folders acx loads code and configuration from: no generated file is saved in them. */
  guarded?: readonly GuardedDirectory[];
  /** Names the Policy will let load (the expanded grants). */
  grants: ReadonlySet<string>;
  /** On a platform: its assets, readable by uuid as sources. */
  shared?: SharedFiles | undefined;
  env?: NodeJS.ProcessEnv;
}

export function mediaTools(options: MediaToolsetOptions): { tools: PolicyTool[]; skipped: SkippedTool[] } {
  const env = options.env ?? process.env;
  const provider = options.provider;
  const tools: PolicyTool[] = [];
  if (provider && isMediaProvider(provider)) {
    const media = mediaModels({ provider, env, ...(options.baseURL ? { baseURL: options.baseURL } : {}) });
    const base = { workspace: options.workspace, media, shared: options.shared, ...(options.guarded ? { guarded: options.guarded } : {}) };
    const model = (name: string) => (env[name] ? { modelId: env[name] } : {});
    if (provider === 'openai') {
      tools.push(...createOpenAIImageTools({ ...base, ...model('ACX_IMAGE_MODEL') }));
      tools.push(createListenTool({ ...base, ...model('ACX_TRANSCRIPTION_MODEL') }));
    } else {
      tools.push(...createGrokImageTools({ ...base, ...model('ACX_XAI_IMAGE_MODEL') }));
      tools.push(createGrokVideoTool({ ...base, ...model('ACX_XAI_VIDEO_MODEL') }));
      // Reads XAI_MANAGEMENT_KEY (and XAI_TEAM_ID) at each call: a billing credential, not the inference key.
      tools.push(createXaiBalanceTool({ env }));
    }
  }
  const offered = new Set(tools.map((tool) => tool.name));
  const skipped = Object.entries(MEDIA_TOOL_PROVIDER)
    .filter(([name]) => !offered.has(name) && options.grants.has(name))
    .map(([name, needs]) => ({
      name,
      reason: `it needs the ${needs} provider and this agent's model ${provider ? `runs on ${provider}` : 'is not selected'}`,
    }));
  return { tools, skipped };
}
