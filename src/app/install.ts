import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { isPluginFileName, readProviderAffinity } from '../tools/plugins.ts';
import type { Logger } from '../util/logger.ts';
import { grantFileName, listOptIns, OPT_IN_TOOLS, parseOptInNames, type OptInName } from './opt-in.ts';

/**
 * The config home installer and upgrader. It lays the shipped defaults out as real files an
 * operator can see and edit, and reconciles them on upgrade the way dpkg treats conffiles:
 *
 *   untouched default (on-disk hash == manifest hash)  → refreshed to the new default
 *   edited                                             → kept; new default written as <name>.new
 *   deleted (in the manifest, missing on disk)         → respected, never resurrected
 *   anything that is not a shipped default             → never touched
 *
 * `.manifest.json` maps each shipped file to the sha256 of the default last written for it;
 * `.version` stamps the acx version that produced the home. model_params.json, env files and
 * everything else the operator adds are theirs alone: the installer never creates, refreshes or
 * prunes them. Every write is atomic (temp file + rename).
 */

export const SHIPPED_FILES = ['prompts/system-prompt.md', 'prompts/initialize.md'] as const;
export const OVERLAY_DIRS = ['mcp', 'tools'] as const;
export const MANIFEST_FILE = '.manifest.json';
export const VERSION_FILE = '.version';
export const NEW_SUFFIX = '.new';

/** Relative path (forward slashes) → content of each shipped default. */
export type DefaultsMap = Readonly<Record<string, string>>;

export interface InstallOptions {
  configHome: string;
  version: string;
  /** Opt-in grants to record, as typed (`["shell,system_prompt"]` works). */
  optIn?: readonly string[];
  logger: Logger;
  /** The shipped defaults; the packaged ones unless a test injects others. */
  defaults?: DefaultsMap;
  /**
   * The agent's model provider (`openai`, `xai`, …): a tools/ plugin default whose
   * `// acx-provider:` header names other providers is not laid down, and an untouched copy an
   * earlier install left is pruned. Unknown (absent or null) lays down every default.
   */
  provider?: string | null;
  /** Lay down every plugin default whatever the provider (`--all-providers`). */
  allProviders?: boolean;
}

export interface InstallSummary {
  configHome: string;
  version: string;
  /** The version stamped before this run, or null for a fresh home. */
  previousVersion: string | null;
  /** Shipped files and overlay directories (`mcp/`) laid down for the first time. */
  created: string[];
  /** Untouched defaults replaced by the new default. */
  refreshed: string[];
  /** Edited defaults kept as they are; the new default sits beside each as `<name>.new`. */
  keptEdited: string[];
  /** Defaults the operator deleted; left deleted. */
  respectedDeleted: string[];
  /** Shipped defaults already current. */
  unchanged: string[];
  /** Files in the manifest that this version no longer ships; left on disk, forgotten. */
  retired: string[];
  /** Files the operator added (model_params.json, env files, drop-ins, backups ...); not touched. */
  untouchedUser: string[];
  /** Plugin defaults for another provider, not laid down (`--provider`, `--all-providers`). */
  otherProvider: string[];
  /** Untouched plugin defaults for another provider that an earlier install left: removed. */
  pruned: string[];
  /** Opt-in grants that were already present and are kept (never stripped). */
  grandfathered: OptInName[];
  /** Opt-in grants this run recorded or confirmed (`--opt-in`). */
  optedIn: OptInName[];
}

interface Manifest {
  format: 1;
  files: Record<string, string>;
}

/** Names the installer must never own, even if a defaults map lists them. */
const USER_OWNED = /(^|\/)(model_params\.json|search_params\.json|[^/]*\.env|\.env[^/]*)$/;
const MAX_LISTED_USER_FILES = 200;

export function sha256Hex(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

export { writeFileAtomic } from '../util/atomic-write.ts';

let packaged: DefaultsMap | undefined;

/** The defaults shipped in this package (src/app/defaults/). */
export function packagedDefaults(): DefaultsMap {
  if (!packaged) {
    const entries = SHIPPED_FILES.map((file) => [file, readFileSync(new URL(`./defaults/${file}`, import.meta.url), 'utf8')] as const);
    packaged = Object.freeze(Object.fromEntries(entries));
  }
  return packaged;
}

/** A config home counts as installed once the installer has written its bookkeeping. */
export function isInstalled(configHome: string): boolean {
  return existsSync(join(configHome, MANIFEST_FILE)) || existsSync(join(configHome, VERSION_FILE));
}

export function readVersionStamp(configHome: string): string | null {
  const path = join(configHome, VERSION_FILE);
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : null;
}

/** The files the installer laid down in this home (its manifest), e.g. `prompts/initialize.md`; throws on a broken manifest. */
export function installedDefaults(configHome: string): string[] {
  return Object.keys(readManifest(configHome).files);
}

function checkDefaults(defaults: DefaultsMap): void {
  for (const file of Object.keys(defaults)) {
    const bad =
      file.startsWith('/') ||
      file.includes('\\') ||
      file.split('/').some((part) => part === '' || part === '.' || part === '..') ||
      file === MANIFEST_FILE ||
      file === VERSION_FILE ||
      USER_OWNED.test(file);
    if (bad) throw new ConfigError(`Shipped default "${file}" is not a file the installer may own.`);
  }
}

function readManifest(configHome: string): Manifest {
  const path = join(configHome, MANIFEST_FILE);
  if (!existsSync(path)) return { format: 1, files: {} };
  const hint = `Delete ${path} and run acx install again: your edited files are kept and new defaults land beside them as .new.`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON (${errorMessage(error)}).`, { hint });
  }
  const files = (parsed as { files?: unknown } | null)?.files;
  if (typeof files !== 'object' || files === null || Array.isArray(files)) {
    throw new ConfigError(`${path} has no "files" map.`, { hint });
  }
  const checked: Record<string, string> = {};
  for (const [file, hash] of Object.entries(files)) {
    if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) {
      throw new ConfigError(`${path}: the entry for "${file}" is not a sha256 hex digest.`, { hint });
    }
    checked[file] = hash;
  }
  return { format: 1, files: checked };
}

function serializeManifest(manifest: Manifest): string {
  const files = Object.fromEntries(Object.entries(manifest.files).sort(([a], [b]) => a.localeCompare(b)));
  return `${JSON.stringify({ format: 1, files }, null, 2)}\n`;
}

/** Writes only when the content differs, so an idempotent run leaves files (and mtimes) alone. */
function writeIfChanged(path: string, content: string): boolean {
  if (existsSync(path) && readFileSync(path, 'utf8') === content) return false;
  writeFileAtomic(path, content);
  return true;
}

function ensureDirectory(path: string, label: string): boolean {
  if (existsSync(path)) {
    if (!statSync(path).isDirectory()) {
      throw new ConfigError(`${path} exists but is not a directory.`, { hint: `Move it aside so acx can use ${label}.` });
    }
    return false;
  }
  mkdirSync(path, { recursive: true });
  return true;
}

/** Everything in the home that is not the installer's: listed, never modified. */
function listUserFiles(configHome: string, skip: ReadonlySet<string>): string[] {
  const found: string[] = [];
  const walk = (dir: string, prefix: string, depth: number): void => {
    if (depth > 4 || found.length >= MAX_LISTED_USER_FILES) return;
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(join(dir, entry.name), rel, depth + 1);
      else if (!skip.has(rel) && !/\.tmp-\d+-[0-9a-f]{12}$/.test(rel)) found.push(rel);
      if (found.length >= MAX_LISTED_USER_FILES) return;
    }
  };
  walk(configHome, '', 0);
  return found;
}

function grantFileContent(name: OptInName, version: string): string {
  return (
    `# acx opt-in grant: ${name} (${OPT_IN_TOOLS[name].summary}).\n` +
    `# Recorded by acx install ${version}. Delete this file to revoke the grant.\n`
  );
}

/**
 * Installs or upgrades the config home. Idempotent: a second run with the same version and
 * defaults writes nothing. Bad input (an unknown opt-in, a broken manifest, a file where a
 * directory belongs) is refused before anything is written.
 */
export function installConfigHome(options: InstallOptions): InstallSummary {
  const configHome = resolve(options.configHome);
  const defaults = options.defaults ?? packagedDefaults();
  const logger = options.logger;
  checkDefaults(defaults);
  const requested = parseOptInNames(options.optIn ?? []);
  if (existsSync(configHome) && !statSync(configHome).isDirectory()) {
    throw new ConfigError(`The config home ${configHome} exists but is not a directory.`, {
      hint: 'Pass --config-home DIR (or set ACX_CONFIG_HOME) to a directory.',
    });
  }
  for (const dir of OVERLAY_DIRS) {
    const path = join(configHome, dir);
    if (existsSync(path) && !statSync(path).isDirectory()) {
      throw new ConfigError(`${path} exists but is not a directory.`, { hint: `Move it aside so acx can use ${dir}/ as the ${dir} overlay.` });
    }
  }
  const manifest = readManifest(configHome);
  const previousVersion = readVersionStamp(configHome);
  const grantsBefore = listOptIns(configHome).granted;

  const summary: InstallSummary = {
    configHome,
    version: options.version,
    previousVersion,
    created: [],
    refreshed: [],
    keptEdited: [],
    respectedDeleted: [],
    unchanged: [],
    retired: [],
    untouchedUser: [],
    otherProvider: [],
    pruned: [],
    grandfathered: grantsBefore.filter((name) => !requested.includes(name)),
    optedIn: [...requested],
  };

  ensureDirectory(configHome, 'it as the config home');
  const files: Record<string, string> = {};
  const forProvider = providerFilter(options);
  for (const [file, content] of Object.entries(defaults)) {
    const path = join(configHome, ...file.split('/'));
    const shipped = sha256Hex(content);
    const recorded = manifest.files[file];
    const onDisk = existsSync(path) || isDanglingLink(path);
    if (!forProvider(file, content)) {
      summary.otherProvider.push(file);
      // Untouched (it is this default or the one recorded): prune it. Edited: it is the operator's now.
      const current = onDisk && !lstatSync(path).isSymbolicLink() ? sha256Hex(readFileSync(path)) : null;
      if (current !== null && (current === shipped || current === recorded)) {
        rmSync(path);
        summary.pruned.push(file);
      } else if (recorded !== undefined) {
        // Kept (edited) or deleted by the operator: the record stays, so a deletion is still respected later.
        files[file] = recorded;
      }
      continue;
    }
    files[file] = shipped;
    if (!onDisk) {
      if (recorded !== undefined) {
        summary.respectedDeleted.push(file);
        files[file] = recorded;
      } else {
        writeFileAtomic(path, content);
        summary.created.push(file);
      }
      continue;
    }
    // A link the operator put in place is theirs: treat it like an edit, never replace it.
    const current = lstatSync(path).isSymbolicLink() ? null : sha256Hex(readFileSync(path));
    if (current === shipped) {
      summary.unchanged.push(file);
    } else if (current !== null && recorded !== undefined && current === recorded) {
      writeFileAtomic(path, content);
      summary.refreshed.push(file);
    } else {
      summary.keptEdited.push(file);
      if (writeIfChanged(`${path}${NEW_SUFFIX}`, content)) {
        logger.warn('config_default_kept_edited', { file, new: `${file}${NEW_SUFFIX}` });
      }
    }
  }
  for (const file of Object.keys(manifest.files)) {
    if (!Object.hasOwn(defaults, file)) summary.retired.push(file);
  }
  for (const dir of OVERLAY_DIRS) {
    if (ensureDirectory(join(configHome, dir), `${dir}/`)) summary.created.push(`${dir}/`);
  }
  for (const name of requested) {
    const path = join(configHome, 'tools', grantFileName(name));
    if (!existsSync(path)) writeFileAtomic(path, grantFileContent(name, options.version));
  }

  writeIfChanged(join(configHome, MANIFEST_FILE), serializeManifest({ format: 1, files }));
  writeIfChanged(join(configHome, VERSION_FILE), `${options.version}\n`);

  const skip = new Set<string>([MANIFEST_FILE, VERSION_FILE]);
  for (const file of Object.keys(defaults)) {
    skip.add(file);
    skip.add(`${file}${NEW_SUFFIX}`);
  }
  for (const name of listOptIns(configHome).granted) skip.add(`tools/${grantFileName(name)}`);
  summary.untouchedUser = listUserFiles(configHome, skip);

  logger.info('config_home_installed', {
    config_home: configHome,
    version: options.version,
    previous_version: previousVersion ?? undefined,
    created: summary.created.length,
    refreshed: summary.refreshed.length,
    kept_edited: summary.keptEdited.length,
    respected_deleted: summary.respectedDeleted.length,
    pruned: summary.pruned.join(',') || undefined,
    opted_in: summary.optedIn.join(',') || undefined,
    grandfathered: summary.grandfathered.join(',') || undefined,
  });
  return summary;
}

/** Whether a default belongs in this home: plugin defaults (tools/) by their provider header. */
function providerFilter(options: Pick<InstallOptions, 'provider' | 'allProviders'>): (file: string, content: string) => boolean {
  const provider = options.provider?.split('.')[0]?.toLowerCase();
  if (options.allProviders || !provider) return () => true;
  return (file, content) => {
    if (!file.startsWith('tools/') || !isPluginFileName(file.slice('tools/'.length))) return true;
    const affinity = readProviderAffinity(content);
    return affinity === null || affinity.includes(provider);
  };
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

export interface ReconcileOptions {
  configHome: string;
  version: string;
  logger: Logger;
  defaults?: DefaultsMap;
  /** The agent's model provider: plugin defaults for others are not laid down (see InstallOptions). */
  provider?: string | null;
}

/**
 * The first run after an upgrade: when the home carries a `.version` stamp from another acx
 * version, re-run the reconcile so untouched defaults do not go stale. A home that was never
 * installed runs on the packaged defaults and has nothing to reconcile; it is left alone.
 * Returns the summary when a reconcile ran, otherwise null.
 */
export function reconcileIfUpgraded(options: ReconcileOptions): InstallSummary | null {
  const configHome = resolve(options.configHome);
  const stamp = readVersionStamp(configHome);
  if (stamp === null || stamp === options.version) return null;
  options.logger.info('config_home_upgrade', { config_home: configHome, from: stamp, to: options.version });
  return installConfigHome({
    configHome,
    version: options.version,
    logger: options.logger,
    ...(options.defaults ? { defaults: options.defaults } : {}),
    ...(options.provider ? { provider: options.provider } : {}),
  });
}
