import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AcxError, errorMarker, errorMessage, setMarker } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { MemoryProvider } from './provider.ts';

/**
 * Which memory provider an agent binds: `sqlite` (the default: keyword memory and five tools),
 * `semantic` (recall by meaning, src/memory/semantic.ts), or `module#export`, a MemoryProvider of
 * the user's own — a file (relative to where the spec was written: the agent directory for
 * agent.json, the config home for ACX_MEMORY_PROVIDER) or an installed package, and the export
 * that holds the provider or a function making one (`#default` when left out).
 */
export type MemoryProviderSource = 'env' | 'agent.json' | 'default';

export type MemoryProviderSpec =
  | { kind: 'sqlite' | 'semantic'; text: string; source: MemoryProviderSource }
  | { kind: 'module'; text: string; source: MemoryProviderSource; module: string; exportName: string; baseDir: string };

const MEMORY_PROVIDER_MARKER = errorMarker('MemoryProviderError');

/** A memory provider spec that cannot be bound: the message names what was wrong. */
export class MemoryProviderError extends AcxError {
  constructor(message: string, hint: string) {
    super('memory-provider', message, { hint });
    setMarker(this, MEMORY_PROVIDER_MARKER);
    this.name = 'MemoryProviderError';
  }

  static override isInstance(error: unknown): error is MemoryProviderError {
    return AcxError.hasMarker(error, MEMORY_PROVIDER_MARKER);
  }
}

const SPEC_HINT = 'Use "sqlite", "semantic", or "./path/to/provider.mjs#exportName" (or "package-name#exportName").';
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const PACKAGE_NAME = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(?:\/[\w./-]+)?$/i;

function where(source: MemoryProviderSource): string {
  return source === 'env' ? 'ACX_MEMORY_PROVIDER' : source === 'agent.json' ? 'agent.json memory.provider' : 'the default';
}

export function parseMemoryProviderSpec(text: string, source: MemoryProviderSource, baseDir: string): MemoryProviderSpec {
  const spec = text.trim();
  if (spec === 'sqlite' || spec === 'semantic') return { kind: spec, text: spec, source };
  const hash = spec.lastIndexOf('#');
  const module = hash >= 0 ? spec.slice(0, hash) : spec;
  const exportName = hash >= 0 ? spec.slice(hash + 1) : 'default';
  const isPath = module.startsWith('.') || isAbsolute(module);
  if (module === '' || (!isPath && hash < 0)) {
    throw new MemoryProviderError(`${where(source)} is ${JSON.stringify(text)}: not a memory provider acx knows, nor a module#export spec.`, SPEC_HINT);
  }
  if (!isPath && !PACKAGE_NAME.test(module)) {
    throw new MemoryProviderError(`${where(source)} names the module ${JSON.stringify(module)}, which is neither a path (./… or /…) nor a package name.`, SPEC_HINT);
  }
  if (!EXPORT_NAME.test(exportName)) {
    throw new MemoryProviderError(`${where(source)} names the export ${JSON.stringify(exportName)}, which is not a JavaScript identifier.`, SPEC_HINT);
  }
  return { kind: 'module', text: spec, source, module, exportName, baseDir };
}

export interface LoadedMemoryProvider {
  provider: MemoryProvider;
  /** The file the provider was imported from. */
  file: string;
  /** The provider's package (name@version from its package.json), or null when it has none. */
  package: { name: string | null; version: string | null } | null;
}

/** What a provider factory (`export function createMemory(options)`) is handed. */
export interface MemoryProviderFactoryOptions {
  /** Where acx would keep this agent's memory file; the provider may use it or not. */
  path: string;
  agentId: string;
  logger: Logger;
}

export async function loadMemoryProviderModule(
  spec: Extract<MemoryProviderSpec, { kind: 'module' }>,
  options: MemoryProviderFactoryOptions,
): Promise<LoadedMemoryProvider> {
  const file = resolveModuleFile(spec);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new MemoryProviderError(
      `The memory provider module ${file} (${where(spec.source)}) failed to import: ${error instanceof Error ? `${error.name}: ${error.message}` : errorMessage(error)}.`,
      'Fix the module so it imports on its own (node --check), then run again.',
    );
  }
  if (!(spec.exportName in module)) {
    const names = Object.keys(module).filter((name) => name !== '__esModule').sort();
    throw new MemoryProviderError(
      `The memory provider module ${file} has no export "${spec.exportName}" (it exports: ${names.length ? names.join(', ') : 'nothing'}).`,
      `Name one of its exports after "#", e.g. ${spec.module}#${names[0] ?? 'createMemory'}.`,
    );
  }
  let value = module[spec.exportName];
  if (typeof value === 'function' && !isProviderShaped(value)) {
    try {
      value = await (value as (o: MemoryProviderFactoryOptions) => unknown)(options);
    } catch (error) {
      throw new MemoryProviderError(`The memory provider factory ${spec.module}#${spec.exportName} threw: ${errorMessage(error)}.`, 'Fix the factory, or export a ready provider object.');
    }
  }
  const missing = providerProblems(value);
  if (missing.length > 0) {
    throw new MemoryProviderError(
      `${spec.module}#${spec.exportName} is not a MemoryProvider: ${missing.join('; ')}.`,
      'Export an object (or a function returning one) with name, tools(), observe(), context() and remember(); see docs/memory.md.',
    );
  }
  return { provider: value as MemoryProvider, file, package: packageOf(file, spec) };
}

function resolveModuleFile(spec: Extract<MemoryProviderSpec, { kind: 'module' }>): string {
  if (spec.module.startsWith('.') || isAbsolute(spec.module)) {
    const file = resolve(spec.baseDir, spec.module);
    if (!existsSync(file)) {
      throw new MemoryProviderError(`The memory provider module ${file} (${where(spec.source)}, relative to ${spec.baseDir}) does not exist.`, 'Check the path; a relative path starts from the directory that holds the setting.');
    }
    return file;
  }
  try {
    return createRequire(join(spec.baseDir, 'noop.js')).resolve(spec.module);
  } catch (error) {
    throw new MemoryProviderError(
      `The memory provider package "${spec.module}" (${where(spec.source)}) cannot be found from ${spec.baseDir}: ${errorMessage(error).split('\n')[0]}.`,
      `Install it where ${spec.baseDir} can see it (npm install ${spec.module.startsWith('@') ? spec.module.split('/').slice(0, 2).join('/') : spec.module.split('/')[0]}), or give a path.`,
    );
  }
}

function isProviderShaped(value: unknown): boolean {
  return typeof (value as { observe?: unknown }).observe === 'function' && typeof (value as { context?: unknown }).context === 'function';
}

function providerProblems(value: unknown): string[] {
  if (value === null || typeof value !== 'object') return [`it is ${value === null ? 'null' : `a ${typeof value}`}, not an object`];
  const v = value as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof v.name !== 'string' || v.name.trim() === '') problems.push('"name" must be a non-empty string');
  for (const method of ['tools', 'observe', 'context', 'remember'] as const) {
    if (typeof v[method] !== 'function') problems.push(`"${method}" must be a function`);
  }
  if (v.close !== undefined && typeof v.close !== 'function') problems.push('"close" must be a function when present');
  return problems;
}

/** The nearest package.json at or above the file, not above the spec's base directory for a path spec. */
function packageOf(file: string, spec: Extract<MemoryProviderSpec, { kind: 'module' }>): LoadedMemoryProvider['package'] {
  const stop = spec.module.startsWith('.') || isAbsolute(spec.module) ? resolve(spec.baseDir) : undefined;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      try {
        const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown; version?: unknown };
        return { name: typeof pkg.name === 'string' ? pkg.name : null, version: typeof pkg.version === 'string' ? pkg.version : null };
      } catch {
        return null;
      }
    }
    if (dir === stop || dirname(dir) === dir || (stop !== undefined && !dir.startsWith(stop + sep) && dir !== stop)) return null;
  }
}
