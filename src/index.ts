/**
 * acx — the public library surface.
 */
// First: on a Node.js acx cannot run on, importing it says so before anything else runs.
import './node-guard.ts';
export { HarnessAgent } from './harness/harness-agent.ts';
export type { AgentSession, ContinueOptions, CreateSessionOptions, GenerateOptions, HarnessAgentSettings, HarnessCallOptions, ResumedStream, StreamResult, TurnCallbacks } from './harness/harness-agent.ts';
export type { HarnessOutput, HarnessStreamResult, HarnessTurnResult } from './harness/harness-results.ts';
export type { PendingApprovalPolicy } from './harness/pending-turn.ts';
export type { AfterTurnEvent, AgentGuardrails, AgentHooks } from './harness/guards.ts';
export type {
  AfterToolCallResult,
  BeforeModelCallResult,
  BeforeToolCallResult,
  Guardrail,
  GuardrailKind,
  GuardrailVerdict,
  InputGuardrailArgs,
  ModelCallInfo,
  OutputGuardrailArgs,
  ToolCallInfo,
  ToolCallOutcome,
} from './core/hooks.ts';
export { resumeUIStreamResponse, uiErrorText, uiMessagesResponse, type ResumeUIStreamOptions } from './harness/ui-responses.ts';
export type { TurnStreamSettings } from './harness/turn-streams.ts';
export { openTurnStreamStore, type TurnStreamInfo, type TurnStreamKey, type TurnStreamPart, type TurnStreamStore } from './store/turn-streams.ts';
export { createEngineHarness } from './harness/engine-harness.ts';
export { loadAgent, type LoadAgentOptions } from './app/load-agent.ts';
export type { PreparedAgent } from './app/prepare.ts';
export type { EngineHarnessOptions } from './harness/engine-harness.ts';
export type { AgentConfig, CompactionResult, Harness, HarnessSession, OpenSessionOptions } from './harness/harness.ts';
export type { ForkOptions, RewindOptions, RewindResult } from './harness/session-branch.ts';
export type { RestoredFile } from './harness/file-rewind.ts';
export type { SessionState, SuspendedSession, TurnContinuation } from './harness/session-state.ts';
export { Engine, DEFAULT_MAX_STEPS } from './engine/engine.ts';
export type { ApprovalDecision, Checkpoint, SuspendReason, TurnResult } from './engine/engine.ts';
export type { ApprovalRequest, CompactionReport, FileChange, FinishReason, HarnessStreamPart, Usage } from './engine/events.ts';
export type { ElicitationField, ElicitationHandler, ElicitationRequest, ElicitationResult, ElicitationValue } from './core/elicitation.ts';
export type { SpeechMode } from './engine/brief.ts';
export type { TelemetrySettings } from './engine/telemetry.ts';
export { tool, CAPABILITY_SCOPES } from './tools/tool.ts';
export type { CapabilityScope, Tool, ToolContext, ToolEffect, ToolKind, ToolPlatform } from './tools/tool.ts';
export type { PermissionMode } from './tools/permission.ts';
export { resolveModel, fromLanguageModel, parseModelSpec, PROVIDERS } from './model/providers.ts';
export type { CacheMode, ResolvedModel } from './model/providers.ts';
export { createRecordingModel, createReplayModel } from './model/cassette.ts';
// Errors: narrow with `X.isInstance(error)` (works across two installed copies of acx) or on
// `AcxError.hasCode(error, code)`; every code is in the AcxErrorCode union.
export { AcxError, ConfigError, GuardrailTrippedError, HarnessCapabilityUnsupportedError, PolicyError, ReplayMismatchError, RewindRefusedError, type RewindRefusal, TurnAbortedError } from './core/errors.ts';
export type { AcxErrorCode, AcxErrorOptions } from './core/errors.ts';
export { ProviderError } from './engine/provider-failure.ts';
export type { ProviderErrorCode } from './engine/provider-failure.ts';
export { CartridgeBootRefusal } from './contract/boot-refusal.ts';
export type { BootRefusalKind } from './contract/boot-refusal.ts';
export { UnsupportedHarnessError } from './contract/refusal.ts';
export { createLogger } from './util/logger.ts';
export { wake, turnIdFor, DEFAULT_BREAKER } from './frontends/wake/session.ts';
export type { WakeOptions, WakeOutcome } from './frontends/wake/session.ts';
export { openWakeStore } from './store/open-wake-store.ts';
export { SqliteWakeStore } from './store/sqlite-wake-store.ts';
export type { BreakerSettings, InboxItem, WakeEvent, WakeStore } from './store/wake-store.ts';
