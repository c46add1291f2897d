import { type ChildProcess, spawn } from 'node:child_process';
import type { Logger } from '../../util/logger.ts';
import type { RoutedAgent } from './agents.ts';
import { WARM_FLAG } from './warm-protocol.ts';

/** This acx, as a program and its first arguments: this Node on this acx's bin. */
export const THIS_ACX: readonly string[] = [process.execPath, new URL('../../../bin/acx.js', import.meta.url).pathname];

/**
 * What a wake runs, before its `--timeline <uuid> [trigger]`: the agent's own command, else
 * `acx wake <dir>`; a first word `acx` is `acx` (this one, unless the router was given another).
 * Always argv handed to the program directly, never a shell line, so nothing in a handle, a uuid
 * or a delivery can become a command.
 */
export function wakeArgv(agent: RoutedAgent, acx: readonly string[] = THIS_ACX): string[] {
  if (agent.command) return agent.command[0] === 'acx' ? [...acx, ...agent.command.slice(1)] : [...agent.command];
  if (agent.dir === undefined) throw new TypeError(`@${agent.name} has neither an agent directory nor a wake command`);
  return [...acx, 'wake', agent.dir];
}

/**
 * A warm wake process's command line (warm-protocol.ts): `acx --warm-wake <the wake's own
 * arguments>`, for a wake that is acx's; undefined for another program's wake command, which is
 * started per event.
 */
export function warmWakeArgv(agent: RoutedAgent, acx: readonly string[] = THIS_ACX): string[] | undefined {
  if (agent.command && agent.command[0] !== 'acx') return undefined;
  return [...acx, WARM_FLAG, ...wakeArgv(agent, acx).slice(acx.length)];
}

/** Runs one wake to its end: its exit code (127 when it could not be started). Its stderr lines go to the debug log. */
export function runWakeProcess(argv: readonly string[], env: NodeJS.ProcessEnv, logger: Logger, agent: string): Promise<number> {
  const [program, ...args] = argv as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(program, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    logWakeOutput(child, logger, agent);
    child.on('error', (error) => {
      logger.warn('router wake not started', { agent, program, error: error.message });
      resolve(127);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/** A wake's stderr, line by line, into the router's debug log. */
export function logWakeOutput(child: ChildProcess, logger: Logger, agent: string): void {
  child.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logger.debug('wake output', { agent, line });
  });
}
