import type { Tool } from '../../tools/tool.ts';
import { createAssetTools } from './assets.ts';
import { createGovernanceTools } from './governance.ts';
import type { PlatformToolsOptions } from './kit.ts';
import { createMessageTools } from './messages.ts';
import { createPeopleTools } from './people.ts';
import { createTaskTools } from './tasks.ts';
import { createTimelineTools } from './timelines.ts';
import { createWebhookTools } from './webhooks.ts';

/**
 * The platform tools: how a timeline agent perceives and acts — it speaks with messages_create,
 * shares files, schedules tasks, governs rooms (timelines, trust, lock, delete), looks around
 * (users) and wires inbound activity (webhook endpoints and events). One tool per action, each
 * with the kind and effect that permission modes and crash recovery go by.
 */
export function createPlatformTools(options: PlatformToolsOptions): Tool[] {
  return [
    ...createMessageTools(options),
    ...createAssetTools(options),
    ...createTaskTools(options),
    ...createTimelineTools(options),
    ...createPeopleTools(options),
    ...createGovernanceTools(options),
    ...createWebhookTools(options),
  ];
}

export { type KeyedKind, PlatformToolError, type PlatformToolsOptions, plainReason } from './kit.ts';
export { activationTime } from './when.ts';
export { PLATFORM_TOOL_GOTCHAS, toolManifest } from './manifest.ts';
