import fs from 'node:fs';
import { z } from 'zod';
import { errorMessage, PolicyError } from '../../core/errors.ts';
import { processIsRoot, type PolicyTool } from '../policy.ts';
import { withoutFleetSecrets } from '../sandbox/environment.ts';
import { findExecutable } from '../sandbox/isolation.ts';
import { formatProcessResult, runProcess } from '../sandbox/process.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * `shell`: the unsandboxed host shell. The command runs as this process's OS user with its
 * environment (less the secrets a process hosting several agents holds for all of them:
 * isFleetSecretName); that user's Unix permissions are the whole boundary. Two gates, both required:
 * it is opt-in (granted by name) AND it needs `host-shell`, which only the unlocked profile
 * allows. It refuses to load (Policy) or run (here) as root.
 */
export interface ShellOptions {
  /** Working directory of each call; defaults to the process's current directory. */
  cwd?: string;
  timeoutMs?: number;
  maxTimeoutMs?: number;
  maxOutputBytes?: number;
  /** Run each call as a login shell (`-l`, the default), which reads the user's profile. */
  loginShell?: boolean;
  isRoot?: () => boolean;
}

export const shellInputSchema = lazySchema(() => z.object({
  command: z.string().min(1).describe('A full shell command line (pipes, redirects, && all work).'),
  timeoutMs: z.number().int().positive().optional().describe('Time limit in milliseconds.'),
  stdin: z.string().optional(),
}));
export type ShellInput = z.infer<ReturnType<typeof shellInputSchema>>;

export function createShellTool(options: ShellOptions = {}): PolicyTool {
  const isRoot = options.isRoot ?? processIsRoot;
  return {
    name: 'shell',
    description:
      'Run a command line directly on the host as the agent\'s OS user, with its environment (never other agents\' platform tokens or webhook secrets) and network. ' +
      'Each call is a fresh login shell (no TTY); long output keeps its beginning and end.',
    inputSchema: shellInputSchema(),
    capabilityScopes: ['exec'],
    kind: 'execute',
    effect: 'unsafe',
    optIn: true,
    requires: ['host-shell'],
    async execute(input: ShellInput, context) {
      if (isRoot()) {
        throw new PolicyError('The shell tool refuses to run as root.', { hint: 'Run acx as an unprivileged user.' });
      }
      const cwd = options.cwd ?? process.cwd();
      workingFolder(cwd);
      const bash = findExecutable('bash');
      const flags = options.loginShell === false ? '-c' : '-lc';
      const [file, args] = bash ? [bash, [flags, input.command]] : ['/bin/sh', [flags, input.command]];
      const timeoutMs = Math.min(input.timeoutMs ?? options.timeoutMs ?? 60_000, options.maxTimeoutMs ?? 10 * 60_000);
      const result = await runProcess(file, args, {
        cwd,
        env: withoutFleetSecrets(process.env),
        stdin: input.stdin,
        timeoutMs,
        maxOutputBytes: options.maxOutputBytes ?? 64 * 1024,
        signal: context.abortSignal,
      });
      return formatProcessResult(result, timeoutMs);
    },
  };
}

/**
 * The shell works in the agent's working folder (its workspace: operator-configured, never the
 * model's), which a fresh agent may not have yet: it is made on first use. One that cannot be
 * made is said plainly, with why.
 */
function workingFolder(cwd: string): void {
  if (fs.existsSync(cwd)) {
    if (!fs.statSync(cwd).isDirectory()) throw new Error(`The shell's working folder "${cwd}" is a file, not a folder; move it away or point ACX_WORKSPACE elsewhere.`);
    return;
  }
  try {
    fs.mkdirSync(cwd, { recursive: true });
  } catch (error) {
    throw new Error(`The shell's working folder "${cwd}" does not exist and could not be created (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}); create it, or point ACX_WORKSPACE at a folder this user can write.`);
  }
}
