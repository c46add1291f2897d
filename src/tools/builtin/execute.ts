import { z } from 'zod';
import { AcxError, PolicyError } from '../../util/errors.ts';
import { parseProfile, processIsRoot, type Profile } from '../policy.ts';
import { buildSandboxEnv, resolveWorkspace } from '../sandbox/environment.ts';
import { detectIsolation, findExecutable, probeIsolation, wrapCommand, type IsolationInfo, type IsolationKind } from '../sandbox/isolation.ts';
import { formatProcessResult, runProcess, type ProcessResult } from '../sandbox/process.ts';
import { commandView, createCallDirectory } from '../sandbox/view.ts';
import type { Tool } from '../tool.ts';

/**
 * `execute` runs a command for the agent in a sandbox: the workspace as working directory, an
 * allow-listed environment with no credentials and a private HOME, a time limit, an output limit
 * and the whole process group killed at the end. Where the machine allows it, OS isolation on
 * top (bwrap or unshare: no network, uid 65534, only the system, the workspace and HOME in view).
 */
export interface ExecuteOptions {
  workspace: string;
  /** The active profile: as root, only `unlocked` may run without OS isolation. */
  profile?: Profile;
  /** `auto` (default) uses the best isolation available; a kind requires it; `none` disables it. */
  isolation?: 'auto' | IsolationKind;
  /** Default time limit per call (30 s); a call may ask for less or more, up to `maxTimeoutMs`. */
  timeoutMs?: number;
  maxTimeoutMs?: number;
  /** Bytes kept per stream (head and tail), default 64 KiB. */
  maxOutputBytes?: number;
  /** Extra environment variables; any name that looks like a credential is dropped. */
  env?: Record<string, string>;
  isRoot?: () => boolean;
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
  async isolation(): Promise<IsolationInfo> {
    const wanted = this.options.isolation ?? 'auto';
    if (wanted === 'none') return { kind: 'none', reason: 'OS isolation disabled by configuration' };
    const detected = wanted === 'auto' ? await detectIsolation() : await probeIsolation(wanted);
    if (wanted === 'auto' || wanted === detected.kind) return detected;
    throw new AcxError('sandbox-unavailable', `OS isolation "${wanted}" was required but is not available: ${detected.reason}.`, {
      hint: wanted === 'bwrap' ? 'Install bubblewrap (apt-get install bubblewrap) or use isolation "auto".' : 'Use isolation "auto".',
    });
  }

  async run(input: ExecuteInput, signal?: AbortSignal): Promise<SandboxRunResult> {
    const isolation = await this.isolation();
    const isRoot = (this.options.isRoot ?? processIsRoot)();
    const profile = this.options.profile ?? 'locked';
    if (isolation.kind === 'none' && isRoot && profile !== 'unlocked') {
      throw new PolicyError(
        `Refusing to run a command as root without OS isolation (${isolation.reason}).`,
        { hint: 'Install bubblewrap, run acx as an unprivileged user, or select the unlocked profile deliberately.' },
      );
    }
    const maxTimeout = this.options.maxTimeoutMs ?? DEFAULT_MAX_TIMEOUT_MS;
    const timeoutMs = Math.min(input.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxTimeout);
    const call = createCallDirectory();
    try {
      const executable = isolation.kind === 'none' ? undefined : findExecutable(isolation.kind);
      // As root the command still acts as host root inside its user namespace: hide what only root may read.
      const view = isolation.kind === 'none' ? [] : await commandView(this.workspace, call, { maskUnreadable: processIsRoot() });
      const { file, args } = wrapCommand(isolation.kind, { workspace: this.workspace, call, view }, input.command, executable);
      const result = await runProcess(file, args, {
        cwd: this.workspace,
        env: buildSandboxEnv(call.home, { extra: this.options.env }),
        stdin: input.stdin,
        timeoutMs,
        maxOutputBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        signal,
      });
      return { ...result, isolation: isolation.kind, timeoutMs };
    } finally {
      call.remove();
    }
  }
}

export function createExecuteTool(options: ExecuteOptions): Tool<ExecuteInput> {
  const sandbox = new Sandbox({ ...options, profile: options.profile ?? parseProfile(process.env.ACX_PROFILE) });
  return {
    name: 'execute',
    description:
      'Run a shell command (sh -c) in the workspace sandbox. No network when OS isolation is active, no credentials ' +
      'in the environment, a private HOME, a time limit; long output keeps its beginning and end. Each call starts fresh.',
    inputSchema: executeInputSchema,
    capabilityScopes: ['exec', 'fs.read'],
    kind: 'execute',
    effect: 'unsafe',
    async execute(input, context) {
      const result = await sandbox.run(input, context.abortSignal);
      return formatProcessResult(result, result.timeoutMs);
    },
  };
}

/** Re-exported so `acx resolved-config` can report the active isolation from one import. */
export { detectIsolation, type IsolationInfo } from '../sandbox/isolation.ts';
