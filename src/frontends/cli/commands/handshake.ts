import { rename, writeFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { grantedAreaScopes, hostToolsOf, isCartridgePath, negotiatedRevision, readSaveFile } from '../../../app/boot-cartridge.ts';
import { describeCartridgeHost } from '../../../app/prepare.ts';
import { COMPLIANCE_PATH, withSaveZone } from '../../../cartridge/save.ts';
import type { VerifyResult } from '../../../cartridge/verify.ts';
import { AcxError } from '../../../core/errors.ts';
import { resolveTrustFiles, verifyOptionsOf } from '../../../app/trust.ts';
import type { ComplianceDescriptor, ModelFacts } from '../../../contract/descriptor.ts';
import { negotiate, type HostTool } from '../../../contract/negotiate.ts';
import { UnsupportedHarnessError } from '../../../contract/refusal.ts';
import { createHandshakeSources, readHostToolsFile, type HandshakeSources } from '../../../contract/sources.ts';
import { CliExit, EXIT } from '../output.ts';
import { commandLogger } from '../command-logger.ts';
import { configHomeOption, homeOption, jsonOption, registryOption } from '../common-options.ts';
import { modelOption } from '../run-options.ts';

/**
 * `acx handshake FILE`: run the SPEC §8.5 negotiation against the host tools on offer and print
 * the compliance descriptor. Exit 0 on accept, EXIT.refused on refuse.
 */

/** The MCP revision acx speaks when no server was asked (the newest it knows). */
export const DEFAULT_PROTOCOL_REVISION = '2025-11-25';

export interface HandshakeOptions {
  tools?: string;
  mcp?: string[];
  model?: string;
  contextWindow?: number;
  toolUse?: boolean;
  structuredOutput?: boolean;
  protocolRevision?: string;
  grant?: string[];
  bind?: string[];
  fs?: string;
  net?: string;
  out?: string;
  json?: boolean;
  /** Trust registry for a cartridge's verdict (env ACX_TRUST_REGISTRY). */
  registry?: string;
  /** Cartridges: offer acx's own built-in tools, as `acx run` would (default true). */
  builtins?: boolean;
  /** Cartridges: write an accepted descriptor into SAVE, for the preflight self-check (default false: print only). */
  save?: boolean;
  home?: string;
  configHome?: string;
}

export interface HandshakeRun {
  descriptor: ComplianceDescriptor;
  exitCode: number;
  /** What goes to stdout. */
  stdout: string;
  /** What goes to stderr (the JSON-RPC refusal, when refused). */
  stderr: string;
  /** Cartridges: the trust verdict, and whether the descriptor was written to SAVE. */
  verify?: VerifyResult;
  persisted?: boolean;
}

/**
 * The command's core, callable without commander or a process. For a cartridge the host is the
 * one `acx run` would boot it on (acx's built-ins, its MCP drop-ins, plus --tools / --mcp), the
 * verdict is checked first (tampered: refused, nothing read), and with --save an accepted
 * descriptor is persisted in SAVE for the preflight self-check.
 */
export async function runHandshake(file: string, options: HandshakeOptions, sources?: HandshakeSources): Promise<HandshakeRun> {
  const logger = commandLogger('answer');
  let verify: VerifyResult | undefined;
  const trusted = verifyOptionsOf(resolveTrustFiles({ registry: options.registry, configHome: options.configHome }));
  const registry = trusted.registry;
  const source = sources ?? createHandshakeSources({ ...trusted, onVerified: (r) => (verify = r), logger });
  // A tampered cartridge is refused here (cartridge-tampered: exit 4), before anything is read.
  const manifestBytes = await source.readManifestBytes(file);
  const cartridge = verify !== undefined || isCartridgePath(file);
  const tools: HostTool[] = options.tools ? await readHostToolsFile(options.tools) : [];
  let protocolRevision = options.protocolRevision;
  let romModel: string | undefined;
  let areas: { filesystem: string[]; network: string[] } | undefined;
  if (cartridge && options.builtins !== false) {
    const host = await describeCartridgeHost(
      {
        agent: file,
        ...(registry ? { registry } : {}),
        ...(options.model ? { model: options.model } : {}),
        ...(options.home ? { home: options.home } : {}),
        ...(options.configHome ? { configHome: options.configHome } : {}),
      },
      { logger },
    );
    try {
      tools.push(...hostToolsOf(host.tools, host.mcpServers));
      areas = grantedAreaScopes(host.tools);
      if (host.mcpServers.some((server) => server.status === 'ok')) protocolRevision ??= negotiatedRevision(host.mcpServers);
      romModel = host.settings.definition?.manifest.model;
    } finally {
      await host.close();
    }
  }
  if (options.mcp && options.mcp.length > 0) {
    const fromMcp = await source.listMcpTools(options.mcp);
    tools.push(...fromMcp.tools);
    if (fromMcp.protocolRevision && (!protocolRevision || fromMcp.protocolRevision < protocolRevision) && !options.protocolRevision) {
      protocolRevision = fromMcp.protocolRevision;
    }
  }
  applyGrants(tools, options.grant ?? []);
  const { model, contextWindowSource } = await modelFacts({ ...options, ...(options.model ? {} : romModel ? { model: romModel } : {}) }, source);
  const descriptor = negotiate({
    manifestBytes,
    hostTools: tools,
    protocolRevision: protocolRevision ?? DEFAULT_PROTOCOL_REVISION,
    model,
    ...(contextWindowSource ? { contextWindowSource } : {}),
    grantedFilesystem: splitList(options.fs ?? (areas ? areas.filesystem.join(',') : 'fs.read')),
    grantedNetwork: splitList(options.net ?? (areas ? areas.network.join(',') : '')),
    roleBindings: parsePairs(options.bind ?? [], '--bind', 'ROLE=TOOL'),
  });
  if (options.out) await writeAtomically(options.out, `${JSON.stringify(descriptor, null, 2)}\n`);

  const refused = descriptor.verdict === 'refuse';
  let persisted = false;
  // Only when asked: a handshake is a question, and the cartridge may be a tracked file.
  if (cartridge && !refused && options.save === true) {
    const text = `${JSON.stringify(descriptor, null, 2)}\n`;
    if (readSaveFile(file, COMPLIANCE_PATH)?.toString('utf8') !== text) {
      withSaveZone(file, (save) => save.putComplianceDescriptor(descriptor));
    }
    persisted = true;
  }
  const jsonRpc = refused ? JSON.stringify(new UnsupportedHarnessError(descriptor).toJsonRpc()) : '';
  const summary = formatDescriptor(file, descriptor, verify, persisted);
  return {
    descriptor,
    exitCode: refused ? EXIT.refused : EXIT.ok,
    stdout: options.json ? `${JSON.stringify(descriptor, null, 2)}\n` : summary,
    stderr: refused ? `${jsonRpc}\n` : '',
    ...(verify ? { verify } : {}),
    ...(cartridge ? { persisted } : {}),
  };
}

export function register(program: Command): void {
  program
    .command('handshake')
    .description('bind host tools to a cartridge\'s required roles and print the compliance descriptor (exit 3 when refused)')
    .argument('<file>', 'a cartridge, a harness-requirements.json, or a directory containing one')
    .addOption(registryOption())
    .option('--no-builtins', 'cartridges: do not offer acx\'s own built-in tools (only --tools / --mcp)')
    .option('--save', "cartridges: also write an accepted descriptor into the cartridge's SAVE zone (acx run's preflight checks it)")
    .addOption(homeOption())
    .addOption(configHomeOption())
    .option('--tools <file>', 'host tools as JSON: [{name, inputSchema, grantedScopes, description?, source?}]')
    .addOption(new Option('--mcp <server...>', 'MCP servers whose tools are offered: command lines or URLs'))
    .addOption(modelOption().env('ACX_MODEL'))
    .addOption(new Option('--context-window <tokens>', 'the model\'s context window in tokens (env ACX_CONTEXT_WINDOW; default what acx knows of the model)').env('ACX_CONTEXT_WINDOW').argParser(parsePositiveInt))
    .option('--no-tool-use', 'the model cannot call tools')
    .option('--structured-output', 'the model can emit schema-constrained JSON')
    .option('--protocol-revision <rev>', `negotiated MCP revision (default the MCP server's answer, else ${DEFAULT_PROTOCOL_REVISION})`)
    .option('--grant <tool=scopes>', 'grant scopes to a tool, e.g. shell=exec,fs.read; repeatable', collect, [])
    .option('--bind <role=tool>', 'bind a role to a tool explicitly, e.g. acx:execute=shell; repeatable', collect, [])
    .option('--fs <scopes>', 'filesystem scopes the host grants, comma-separated (default fs.read, or for a cartridge what its tools hold)')
    .option('--net <scopes>', 'network scopes the host grants, comma-separated (default none, or for a cartridge what its tools hold)')
    .option('--out <file>', 'also write the descriptor to this file (for the preflight self-check)')
    .addOption(jsonOption('the compliance descriptor'))
    .action(async (file: string, options: HandshakeOptions) => {
      const run = await runHandshake(file, options);
      process.stdout.write(run.stdout);
      if (run.exitCode === EXIT.ok) return;
      // Under --json stdout holds the one JSON document, the descriptor (with its unmet entries).
      if (options.json) {
        process.stderr.write(run.stderr);
        throw new CliExit('refused', '');
      }
      throw new CliExit('refused', run.stderr.trimEnd());
    });
}

/**
 * The model facts to negotiate with. The context window is --context-window when given, else
 * what the engine would resolve for the model (or for no model: no model is needed to negotiate),
 * with the source named so a refusal on the floor says which flag gives the real figure.
 */
async function modelFacts(options: HandshakeOptions, sources: HandshakeSources): Promise<{ model: ModelFacts; contextWindowSource: string | undefined }> {
  const described = options.contextWindow === undefined ? await sources.describeModel(options.model) : {};
  const contextWindowTokens = options.contextWindow ?? described.contextWindowTokens;
  if (contextWindowTokens === undefined) {
    throw new AcxError('usage', 'The handshake needs the model\'s context window', {
      hint: 'Pass --model provider:model-id (or set ACX_MODEL), or --context-window N (or set ACX_CONTEXT_WINDOW).',
    });
  }
  return {
    model: {
      toolUse: options.toolUse === false ? false : (described.toolUse ?? true),
      contextWindowTokens,
      structuredOutput: options.structuredOutput === true || described.structuredOutput === true,
    },
    contextWindowSource: options.contextWindow !== undefined ? '--context-window' : described.contextWindowSource,
  };
}

function applyGrants(tools: HostTool[], grants: string[]): void {
  for (const [name, scopes] of Object.entries(parsePairs(grants, '--grant', 'TOOL=SCOPE[,SCOPE]'))) {
    const tool = tools.find((t) => t.name === name);
    if (!tool) throw new AcxError('usage', `--grant names "${name}", which is not among the offered tools`, { hint: `Offered: ${tools.map((t) => t.name).join(', ') || '(none)'}.` });
    tool.grantedScopes = [...new Set([...tool.grantedScopes, ...splitList(scopes)])];
  }
}

function parsePairs(values: string[], flag: string, shape: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const index = value.indexOf('=');
    if (index <= 0 || index === value.length - 1) throw new AcxError('usage', `${flag} expects ${shape}, got "${value}"`);
    const key = value.slice(0, index);
    out[key] = out[key] && flag === '--grant' ? `${out[key]},${value.slice(index + 1)}` : value.slice(index + 1);
  }
  return out;
}

function splitList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new AcxError('usage', `--context-window expects a positive integer token count, got "${value}"`);
  }
  return n;
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode: 0o644 });
  await rename(temporary, file);
}

export function formatDescriptor(file: string, d: ComplianceDescriptor, verify?: VerifyResult, persisted?: boolean): string {
  const mark = (ok: boolean) => (ok ? 'ok  ' : 'FAIL');
  const lines = [`Handshake for ${file}`];
  if (verify) lines.push(`  cartridge ${verify.verdict}${verify.publisherId ? ` (${verify.publisherId})` : ''}: ${verify.reasons.join('; ')}`);
  lines.push(`  requirements ${d.requirementsHash}`);
  for (const check of d.checks.filter((c) => !c.id.startsWith('tool:'))) {
    lines.push(`  ${mark(check.met)} ${check.id}: requested ${check.requested}, offered ${check.offered}`);
  }
  lines.push('  roles:');
  for (const b of d.bindings) {
    const target = b.boundTool === null ? 'unbound' : `${b.boundTool} (${b.via}${b.source ? `, ${b.source}` : ''}) [${b.scopesGranted.join(', ')}]`;
    const status = b.satisfied ? 'ok  ' : b.tier === 'optional' ? 'skip' : 'FAIL';
    lines.push(`    ${status} ${b.role}${b.tier === 'optional' ? ' (optional)' : ''} -> ${target}`);
    for (const reason of b.satisfied ? [] : (b.reasons ?? [])) lines.push(`         ${reason}`);
  }
  if (d.optionalAbsent.length > 0) lines.push(`  optional roles absent (the agent runs degraded): ${d.optionalAbsent.join(', ')}`);
  lines.push(d.verdict === 'accept' ? 'verdict: accept' : `verdict: refuse (unmet: ${d.unmet.join(', ')})`);
  if (persisted) lines.push(`descriptor saved in the cartridge's SAVE zone (${COMPLIANCE_PATH})`);
  else if (verify && d.verdict === 'accept') lines.push('nothing written (--save writes the descriptor into the cartridge\'s SAVE zone)');
  return `${lines.join('\n')}\n`;
}
