import { reconcileIfUpgraded } from './install.ts';
import type { ResolvedSettings } from './settings.ts';
import { ACX_VERSION } from '../util/version.ts';
import type { Logger } from '../util/logger.ts';

/**
 * The first run after an upgrade brings the config home's untouched defaults up to date for the
 * run's provider (see reconcileIfUpgraded). Called by the commands that run an agent (`acx run`,
 * `chat`, `wake`, `worker` at start-up, `acp`), never by preparing one: a program that loads an
 * agent through the library, or a resident worker answering a job, changes no files in the
 * config home by doing so.
 */
export function reconcileBeforeRun(settings: Pick<ResolvedSettings, 'configHome' | 'model'>, logger: Logger): void {
  reconcileIfUpgraded({ configHome: settings.configHome, version: ACX_VERSION, logger, provider: settings.model?.provider ?? null });
}
