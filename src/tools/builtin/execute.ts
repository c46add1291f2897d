import os from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { AcxError, PolicyError } from '../../core/errors.ts';
import { parseProfile, processIsRoot, type Profile } from '../policy.ts';
import { buildSandboxEnv, resolveWorkspace } from '../sandbox/environment.ts';
import { detectIsolation, findExecutable, probeIsolation, wrapCommand, type IsolationInfo, type IsolationKind } from '../sandbox/isolation.ts';
import { diffSnapshots, SNAPSHOT_MAX_FILES, snapshotWorkspace } from '../sandbox/file-changes.ts';
import { formatProcessResult, runProcess, type ProcessResult } from '../sandbox/process.ts';
import type { GuardedDirectory } from '../sandbox/protected.ts';
import { commandView, createCallDirectory, SANDBOX_UID } from '../sandbox/view.ts';
import type { Logger } from '../../core/logger.ts';
import type { Tool, ToolContext } from '../tool.ts';

/**
 * `execute` runs a command for the agent in a sandbox: the workspace as working directory, an
 * allow-listed environment with no credentials and a private HOME, a time limit, an output limit
 * and every process of the call killed at the end. Where the machine allows it, OS isolation on
 * top (bwrap or unshare: no network, uid 65534, only the system, the workspace and HOME in view).
 * Without it (an explicit opt-in) the command is an ordinary process of acx's user, and the
 * tool's description says so.
 */
export interface ExecuteOptions {
  workspace: string;
  /** Further workspace roots (an editor's additional directories), in view and writable like the workspace. */
  additionalRoots?: readonly string[];
  /** The active profile: as root, only `unlocked` may run without OS isolation. */
  profile?: Profile;
  /** `auto` (default) uses the best isolation available; a kind requires it; `none` disables it. */
  isolation?: 'auto' | IsolationKind;
  /** Default time limit per call (30 s); a call may ask for less or more, up to `maxTimeoutMs`. */
  timeoutMs?: number;
  maxTimeoutMs?: number;
  /** Bytes kept per stream (head and tail), default 64 KiB. */
  maxOutputBytes?: number;
  /** The folders acx loads code and configuration from: read-only to an isolated command. */
  guarded?: readonly GuardedDirectory[];
  /** Extra environment variables; any name that looks like a credential is dropped. */
  env?: Record<string, string>;
  isRoot?: () => boolean;
  /**
   * Runs commands somewhere else than acx's own sandbox (an editor's terminal, through ACP).
   * The workspace and the limits are still acx's: the runner gets the confined working
   * directory and the time and output limits, and must kill what it started when the call's
   * signal aborts.
   */
  runner?: CommandRunner;
}

/** A command as acx hands it to a runner: already checked, in the workspace's real path. */
export interface CommandRequest {
  command: string;
  /** The workspace's real path (the primary root). */
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface CommandRunner {
  /** Where a command runs and what it can reach, in the words the model gets (after "Run a shell command (sh -c) "). */
  describe: string;
  /** Runs the command to its end, its time limit or the context's abort; the result says which. */
  run(request: CommandRequest, context: ToolContext): Promise<ProcessResult>;
}

export interface SandboxRunResult extends ProcessResult {
  isolation: IsolationKind;
  timeoutMs: number;
}

export const executeInputSchema = z.object({
  command: z.string().min(1).describe('The shell command line to run (sh -c) in the workspace.'),
  timeoutMs: z.number().int().positive().optional().describe('Time limit in milliseconds.'),
  stdin: z.string().optional().describe('Text written to the command on standard input.'),
});
export type ExecuteInput = z.infer<typeof executeInputSchema>;

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;

export class Sandbox {
  private readonly options: ExecuteOptions;
  private resolvedWorkspace: string | undefined;

  constructor(options: ExecuteOptions) {
    this.options = options;
  }

  /** The workspace's real path, resolved on first use (describing tools must not need it to exist). */
  get workspace(): string {
    return (this.resolvedWorkspace ??= resolveWorkspace(this.options.workspace));
  }

  /** The isolation this sandbox will use, or why it cannot run at all. */
  async isolation(logger?: Logger): Promise<IsolationInfo> {
    const wanted = this.options.isolation ?? 'auto';
    if (wanted === 'none') return { kind: 'none', reason: 'OS isolation disabled by configuration' };
    const detected = wanted === 'auto' ? await detectIsolation({ logger }) : await probeIsolation(wanted, { logger });
    if (wanted === 'auto' || wanted === detected.kind) return detected;
    throw new AcxError('sandbox-unavailable', `OS isolation "${wanted}" was required but is not available: ${detected.reason}.`, {
      hint: wanted === 'bwrap' ? 'Install bubblewrap (apt-get install bubblewrap) or use isolation "auto".' : 'Use isolation "auto".',
    });
  }

  /** A call's time limit: what it asked for, else the default, never above the maximum. */
  timeoutFor(input: ExecuteInput): number {
    const maxTimeout = this.options.maxTimeoutMs ?? DEFAULT_MAX_TIMEOUT_MS;
    return Math.min(input.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxTimeout);
  }

  get maxOutputBytes(): number {
    return this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  }

  /** Runs one command; `logger` hears of a call folder that could not be removed (the result stands). */
  async run(input: ExecuteInput, signal?: AbortSignal, logger?: Logger): Promise<SandboxRunResult> {
    const isolation = await this.isolation(logger);
    const isRoot = (this.options.isRoot ?? processIsRoot)();
    const profile = this.options.profile ?? 'locked';
    if (isolation.kind === 'none' && isRoot && profile !== 'unlocked') {
      throw new PolicyError(
        `Refusing to run a command as root without OS isolation (${isolation.reason}).`,
        { hint: 'Install bubblewrap, run acx as an unprivileged user, or select the unlocked profile deliberately.' },
      );
    }
    const timeoutMs = this.timeoutFor(input);
    const call = createCallDirectory();
    try {
      const executable = isolation.kind === 'none' ? undefined : findExecutable(isolation.kind);
      // As root the command still acts as host root inside its user namespace: hide what only root may read.
      const view =
        isolation.kind === 'none'
          ? []
          : await commandView(this.workspace, call, {
              maskUnreadable: processIsRoot(),
              additionalRoots: (this.options.additionalRoots ?? []).map(resolveWorkspace),
              ...(this.options.guarded ? { guarded: this.options.guarded } : {}),
            });
      const { file, args } = wrapCommand(isolation.kind, { workspace: this.workspace, call, view }, input.command, executable);
      const result = await runProcess(file, args, {
        cwd: this.workspace,
        env: buildSandboxEnv(call.home, { extra: this.options.env }),
        stdin: input.stdin,
        timeoutMs,
        maxOutputBytes: this.maxOutputBytes,
        signal,
      });
      return { ...result, isolation: isolation.kind, timeoutMs };
    } finally {
      const failed = call.remove();
      if (failed) logger?.warn('sandbox cleanup failed', { what: 'execute call folder', reason: failed.message });
    }
  }
}

/**
 * What a command run by `execute` can and cannot do, in the words the model (and `acx
 * resolved-config`) get. `auto` is for a tool made before isolation was probed: it states both.
 */
export function describeExecute(isolation: 'auto' | IsolationKind): string {
  const isolated =
    `no network, as an unprivileged user (uid ${SANDBOX_UID}), seeing only the system directories (read-only), ` +
    'the workspace and a private HOME (writable) and a fresh /tmp; no credentials in its environment; ' +
    'nothing it starts outlives the call.';
  const user = hostUser();
  const unisolated =
    `WITHOUT OS isolation: the command runs on the host as ${user}, with network access, and can read every file ` +
    `${user} can, including acx's own environment (/proc/$PPID/environ) with the model API keys in it, although ` +
    "the command's own environment holds no credentials. What it starts is killed at the end, unless it clears its " +
    'environment and leaves the session.';
  const what =
    isolation === 'none'
      ? `in the workspace ${unisolated}`
      : isolation === 'auto'
        ? `in the workspace sandbox. With OS isolation (bwrap or unshare, when this machine has one): ${isolated} Otherwise ${unisolated}`
        : `in the workspace sandbox, isolated by ${isolation}: ${isolated}`;
  return `Run a shell command (sh -c) ${what} A time limit; long output keeps its beginning and end. Each call starts fresh.`;
}

/** This process's user name (a uid without a passwd entry has none). */
function hostUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}

/** The description of an execute tool whose commands a runner runs (calls with stdin stay in acx's sandbox). */
export function describeRunnerExecute(runner: CommandRunner, isolation: 'auto' | IsolationKind): string {
  const sandboxed = describeExecute(isolation).replace(/^Run a shell command \(sh -c\) /, '').replace(/ A time limit;.*$/, '');
  return (
    `Run a shell command (sh -c) ${runner.describe} A time limit; long output keeps its end. Each call starts fresh. ` +
    `A call with stdin runs instead ${sandboxed}`
  );
}

export function createExecuteTool(options: ExecuteOptions): Tool<ExecuteInput> {
  const sandbox = new Sandbox({ ...options, profile: options.profile ?? parseProfile(process.env.ACX_PROFILE) });
  const { runner } = options;
  /** Through the runner when there is one and the call needs no stdin (a terminal has none). */
  const run = async (input: ExecuteInput, context: ToolContext): Promise<{ result: ProcessResult; timeoutMs: number }> => {
    if (!runner || input.stdin !== undefined) {
      const result = await sandbox.run(input, context.abortSignal, context.logger);
      return { result, timeoutMs: result.timeoutMs };
    }
    const timeoutMs = sandbox.timeoutFor(input);
    // sandbox.workspace is the confined real path (resolveWorkspace): a runner never picks its own directory.
    const result = await runner.run({ command: input.command, cwd: sandbox.workspace, timeoutMs, maxOutputBytes: sandbox.maxOutputBytes }, context);
    return { result, timeoutMs };
  };
  return {
    name: 'execute',
    description: runner ? describeRunnerExecute(runner, options.isolation ?? 'auto') : describeExecute(options.isolation ?? 'auto'),
    inputSchema: executeInputSchema,
    capabilityScopes: ['exec', 'fs.read'],
    kind: 'execute',
    effect: 'unsafe',
    async execute(input, context) {
      // Only a caller that listens pays for the two walks of the workspace.
      const before = context.onFileChange ? snapshotWorkspace(sandbox.workspace) : undefined;
      const { result, timeoutMs } = await run(input, context);
      const after = before ? snapshotWorkspace(sandbox.workspace) : undefined;
      // A file the command created was not there before; what it modified or deleted is gone by now (no `before`).
      if (before && after) {
        for (const change of diffSnapshots(before, after)) {
          context.onFileChange?.({ ...change, record: { location: join(sandbox.workspace, change.path), ...(change.kind === 'created' ? { before: null } : {}) } });
        }
      } else if (context.onFileChange) context.logger.info('file changes not tracked', { tool: 'execute', reason: `workspace over ${SNAPSHOT_MAX_FILES} files` });
      return formatProcessResult(result, timeoutMs);
    },
  };
}

/** Re-exported so `acx resolved-config` can report the active isolation from one import. */
export { detectIsolation, type IsolationInfo } from '../sandbox/isolation.ts';
