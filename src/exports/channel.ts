/**
 * `acx/channel` — the BaseCradle platform from TypeScript: `BaseCradleClient` (a typed method for
 * every operation of the platform's OpenAPI description; Bearer token or minted from email and
 * password; only GETs and keyed creates re-sent after a transport failure), its typed errors by
 * problem code (with `isInstance()`), lazy pagination, webhook signature verification
 * (`verifyWebhookSignature`), the deterministic Idempotency-Key of a wake's creates, and the
 * platform tools a timeline agent perceives and speaks through (`createPlatformTools`).
 */
export * from '../channel/index.ts';
