import type { AgentConfig, Harness, HarnessSession, OpenSessionOptions } from '../harness.ts';
import { silentLogger } from '../../util/logger.ts';
import { DEFAULT_CLIENT_APP } from './client-app.ts';
import { bootstrap, type BootstrapResult, defaultCacheDir } from './bootstrap.ts';
import { createLocalSandbox } from './sandbox.ts';
import { type ACPHarnessSession, openACPSession } from './session.ts';
import { type ACPSettings, validateSettings } from './settings.ts';

/**
 * `createACP(settings)`: a Harness that drives any ACP v1 coding agent. Settings are validated
 * here, before any work; the implementation is bootstrapped once per recipe (cached under the
 * acx cache dir) and every session gets its own sandbox session and agent process.
 */

export { DEFAULT_CLIENT_APP };

export interface ACPHarness extends Harness {
  readonly settings: Readonly<ACPSettings>;
  /** Installs (or reuses) the implementation without opening a session. */
  bootstrap(): Promise<BootstrapResult>;
  openSession(config: AgentConfig, options: OpenSessionOptions): Promise<ACPHarnessSession>;
}

export function createACP(settings: ACPSettings): ACPHarness {
  validateSettings(settings);
  const frozen: ACPSettings = { ...settings };
  const logger = settings.logger ?? silentLogger;
  const sandbox = settings.sandbox ?? createLocalSandbox();
  const clientApp = settings.clientApp ?? DEFAULT_CLIENT_APP;
  let installing: Promise<BootstrapResult> | undefined;
  const ensureBootstrap = () => {
    installing ??= bootstrap(frozen, {
      cacheDir: settings.cacheDir ?? defaultCacheDir(settings.hostEnv ?? process.env),
      progress: settings.progress === undefined ? process.stderr : settings.progress,
    }).catch((error: unknown) => {
      installing = undefined; // a failed install may be retried by the next session
      throw error;
    });
    return installing;
  };
  const open = new Set<HarnessSession>();

  return {
    id: `acp:${settings.harnessId}`,
    settings: frozen,
    builtinToolNames: Object.keys(settings.builtinTools ?? {}),
    bootstrap: ensureBootstrap,
    async openSession(config: AgentConfig, { sessionId, explicitResume }): Promise<ACPHarnessSession> {
      const installed = await ensureBootstrap();
      const sandboxSession = await sandbox.createSession({ harnessId: settings.harnessId, sessionId });
      const session = await openACPSession({
        settings: frozen,
        config,
        sessionId,
        explicitResume: explicitResume === true,
        bootstrap: installed,
        sandbox: sandboxSession,
        hostEnv: settings.hostEnv ?? process.env,
        supportsRequestTransformations: sandbox.supportsRequestTransformations,
        clientApp,
        logger,
      });
      open.add(session);
      const forget = <T>(fn: () => Promise<T>) => async () => {
        open.delete(session);
        return fn();
      };
      return { ...session, run: session.run, continue: session.continue, hasUnfinishedTurn: session.hasUnfinishedTurn, detach: forget(session.detach), destroy: forget(session.destroy) };
    },
    async close() {
      await Promise.allSettled([...open].map((s) => s.detach()));
      open.clear();
    },
  };
}
