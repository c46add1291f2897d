import type { AgentConfig } from '../harness.ts';
import type { Logger } from '../../util/logger.ts';
import { type AgentProcess, type ClientHandlers, connectAgentProcess } from './agent-process.ts';
import type { BootstrapResult } from './bootstrap.ts';
import type { UpstreamDown } from './credential-proxy.ts';
import { applyLaunchEnvJson, buildLaunchEnv, type LaunchEnv } from './launch-env.ts';
import { describeNetworkPolicy, resolveNetworkPolicy } from './network-policy.ts';
import type { SandboxSession } from './sandbox.ts';
import { type ACPSettings, DEFAULT_SKILLS_DIRECTORY } from './settings.ts';
import { writeSkills } from './skills.ts';

/**
 * Starts the agent process of a session: its launch environment (credentials brokered through
 * acx's proxy), the files below its $HOME (instructions, skills, the profile's home files), and
 * the process itself in the sandbox, connected as an ACP client.
 */

export interface AgentLaunchInput {
  settings: ACPSettings;
  config: AgentConfig;
  bootstrap: BootstrapResult;
  sandbox: SandboxSession;
  hostEnv: Record<string, string | undefined>;
  supportsRequestTransformations: boolean;
  clientApp: { name: string; version: string };
  log: Logger;
  /** Ports the agent must reach besides the broker's (the host tools' bridge). */
  expose: readonly number[];
  handlers: ClientHandlers;
  onUpstreamDown(down: UpstreamDown): void;
  /** Takes each resource to release when the session closes (or fails to open). */
  own(release: () => Promise<void>): void;
}

export interface LaunchedAgent {
  proc: AgentProcess;
  launch: LaunchEnv;
  /** The agent's model (AgentConfig.model wins over the profile's own setting). */
  model: string | undefined;
  /** The trimmed instructions; where they go is the profile's instructionMapping. */
  instructions: string;
}

export async function launchAgent(input: AgentLaunchInput): Promise<LaunchedAgent> {
  const { settings, config, sandbox, log } = input;
  const launch = await buildLaunchEnv(settings, {
    hostEnv: input.hostEnv,
    bootstrapEnv: input.bootstrap.env,
    sandboxEnv: sandbox.baseEnv(),
    supportsRequestTransformations: input.supportsRequestTransformations,
    clientApp: input.clientApp,
    logger: log,
    ...(sandbox.confinement?.kind === 'bubblewrap' ? { egress: resolveNetworkPolicy(settings.networkPolicy, input.hostEnv) } : {}),
    onUpstreamDown: input.onUpstreamDown,
  });
  if (launch.proxy) {
    const p = launch.proxy;
    input.own(() => p.close());
  }
  const env = launch.env;
  const im = settings.instructionMapping;
  const instructions = config.instructions.trim();
  if (instructions && im?.type === 'launch-env-json') applyLaunchEnvJson(env, im.variable, im.path, instructions);
  if (instructions && im?.type === 'filesystem') sandbox.writeHomeFile(im.path, instructions + '\n');
  writeSkills(sandbox, settings.skillsDirectory ?? DEFAULT_SKILLS_DIRECTORY, config.skills ?? []);
  const model = config.model ?? settings.model;
  if (settings.homeFiles) {
    const files = settings.homeFiles({ env: { ...env }, home: sandbox.home, ...(model ? { model } : {}) });
    for (const [path, contents] of Object.entries(files)) sandbox.writeHomeFile(path, contents);
  }
  const child = sandbox.spawn(input.bootstrap.executable, settings.args ?? [], {
    env,
    cwd: sandbox.workdir,
    readOnly: [input.bootstrap.dir],
    expose: [...input.expose, launch.proxy?.port].filter((port): port is number => port !== undefined),
  });
  const proc = connectAgentProcess(child, input.handlers, { label: settings.harnessId, logger: log });
  input.own(() => proc.stop());
  return { proc, launch, model, instructions };
}

let warnedUnconfined = false;

/**
 * Says how the agent is confined: once per process a WARNING when it runs unconfined on this
 * machine (no bubblewrap, or turned off), an INFO line per session when it is confined.
 */
export function reportConfinement(sandbox: SandboxSession, settings: ACPSettings, hostEnv: Record<string, string | undefined>, log: Logger): void {
  const confinement = sandbox.confinement;
  if (confinement?.kind === 'none') {
    if (warnedUnconfined) return;
    warnedUnconfined = true;
    log.warn('acp agent not sandboxed', {
      reason: confinement.reason,
      note: 'the agent runs as a plain child process: it can read what this user can read and reach any host',
      hint: 'install bubblewrap (bwrap) to confine it',
    });
  } else if (confinement?.kind === 'bubblewrap') {
    log.info('acp agent sandboxed', { kind: 'bubblewrap', network: describeNetworkPolicy(resolveNetworkPolicy(settings.networkPolicy, hostEnv)) });
  }
}
