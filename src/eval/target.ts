import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { loadAgent, type LoadAgentOptions } from '../app/load-agent.ts';
import { isCartridgePath } from '../app/paths.ts';
import type { HarnessAgent } from '../harness/harness-agent.ts';
import type { EvalCase } from './suite.ts';

/**
 * What a suite runs against, opened once per case. An agent directory or cartridge is loaded as
 * `acx run` loads it, on a fresh state home of its own (journal, memory from the agent's seeds,
 * workspace) that is removed after the case: a case never sees what another case did, and an
 * eval changes nothing of the agent it grades (a cartridge is copied first, since running one
 * writes its SAVE zone). A HarnessAgent the caller built is used as it is, a new session per case.
 */
export interface EvalAgentInfo {
  /** The path as given, or the HarnessAgent's id. */
  label: string;
  /** `engine` or the ACP harness (`acp:claude-code`, …). */
  harness: string;
  /** The agent's id and version from its definition (agent.json or the cartridge's ROM), when it has one. */
  id?: string;
  version?: string;
}

export interface OpenedAgent {
  agent: HarnessAgent;
  info: EvalAgentInfo;
  close(): Promise<void>;
}

/** loadAgent's options, less what an eval sets per case: the state home, the session, the cassette. */
export type EvalLoadOptions = Omit<LoadAgentOptions, 'home' | 'store' | 'workspace' | 'session' | 'replay' | 'record'>;

export type EvalTarget = (evalCase: EvalCase) => Promise<OpenedAgent>;

export function targetOf(agent: string | HarnessAgent, options: EvalLoadOptions): EvalTarget {
  return typeof agent === 'string' ? loadedTarget(agent, options) : givenTarget(agent);
}

function loadedTarget(path: string, options: EvalLoadOptions): EvalTarget {
  return async (evalCase) => {
    const home = mkdtempSync(join(tmpdir(), 'acx-eval-'));
    const remove = () => rmSync(home, { recursive: true, force: true });
    try {
      const source = isCartridgePath(path) ? join(home, basename(path)) : path;
      if (source !== path) copyFileSync(path, source);
      const prepared = await loadAgent(source, { ...options, home, ...(evalCase.replay ? { replay: evalCase.replay } : {}) });
      const manifest = prepared.settings.definition?.manifest;
      return {
        agent: prepared.agent,
        info: { label: path, harness: prepared.agent.settings.harness.id, id: prepared.settings.agent.id, ...(manifest?.version ? { version: manifest.version } : {}) },
        async close() {
          try {
            await prepared.close();
          } finally {
            remove();
          }
        },
      };
    } catch (error) {
      remove();
      throw error;
    }
  };
}

function givenTarget(agent: HarnessAgent): EvalTarget {
  const info: EvalAgentInfo = { label: agent.settings.id ?? 'agent', harness: agent.settings.harness.id, ...(agent.settings.id ? { id: agent.settings.id } : {}) };
  return async (evalCase) => {
    if (evalCase.replay) {
      throw new ConfigError(`Case "${evalCase.name}" replays a cassette, which needs an agent directory or cartridge to load on it.`, {
        hint: 'Pass the agent as a path (runEval({ agent: "my-agent" })), or build the HarnessAgent on the replayed model yourself and leave replay out of the case.',
      });
    }
    return { agent, info, close: async () => {} };
  };
}
