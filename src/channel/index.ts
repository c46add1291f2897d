/**
 * acx/channel: the BaseCradle REST client (every operation of the platform's openapi.yaml),
 * its typed errors, lazy pagination and webhook signature verification.
 */
export { BaseCradleClient, type BaseCradleClientOptions } from './client.ts';
export { DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, retryDelayMs, type ObservedResponse, Transport, type TransportOptions } from './transport.ts';
export { type CredentialOptions, DEFAULT_SESSION_NAME } from './auth.ts';
export * from './errors.ts';
export { type Page, PagedList } from './pagination.ts';
export { checkWebhookSignature, headerValue, SIGNATURE_HEADER, type SignatureCheck, verifyWebhookSignature, webhookSignature } from './webhook-signature.ts';
export type * from './types.ts';
export type { CallOptions, CreateOptions } from './resources/shared.ts';
export type { DownloadedFile, NewAsset } from './resources/assets.ts';
export type { ItemFilters } from './resources/messages.ts';
export type { NewTask, TaskFilters } from './resources/tasks.ts';
export type { LoginInput } from './resources/sessions.ts';
export type { InboundDelivery, WebhookEventFilters } from './resources/webhooks.ts';
export { createPlatformTools, type KeyedKind, PLATFORM_TOOL_GOTCHAS, PlatformToolError, type PlatformToolsOptions, toolManifest } from './tools/index.ts';
export { type CreateKeyInput, type CreateKind, createIdempotencyKey, IDEMPOTENCY_NAMESPACE, uuid5 } from './idempotency.ts';
