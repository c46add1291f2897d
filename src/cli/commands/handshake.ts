import { rename, writeFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { AcxError } from '../../util/errors.ts';
import type { ComplianceDescriptor, ModelFacts } from '../../contract/descriptor.ts';
import { negotiate, type HostTool } from '../../contract/negotiate.ts';
import { UnsupportedHarnessError } from '../../contract/refusal.ts';
import { fileHandshakeSources, readHostToolsFile, type HandshakeSources } from '../../contract/sources.ts';
import { CliExit, EXIT } from '../output.ts';

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
}

export interface HandshakeRun {
  descriptor: ComplianceDescriptor;
  exitCode: number;
  /** What goes to stdout. */
  stdout: string;
  /** What goes to stderr (the JSON-RPC refusal, when refused). */
  stderr: string;
}

/** The command's core, callable without commander or a process. */
export async function runHandshake(file: string, options: HandshakeOptions, sources: HandshakeSources = fileHandshakeSources): Promise<HandshakeRun> {
  const manifestBytes = await sources.readManifestBytes(file);
  const tools: HostTool[] = options.tools ? await readHostToolsFile(options.tools) : [];
  let protocolRevision = options.protocolRevision;
  if (options.mcp && options.mcp.length > 0) {
    const fromMcp = await sources.listMcpTools(options.mcp);
    tools.push(...fromMcp.tools);
    protocolRevision ??= fromMcp.protocolRevision;
  }
  applyGrants(tools, options.grant ?? []);
  const model = await modelFacts(options, sources);
  const descriptor = negotiate({
    manifestBytes,
    hostTools: tools,
    protocolRevision: protocolRevision ?? DEFAULT_PROTOCOL_REVISION,
    model,
    grantedFilesystem: splitList(options.fs ?? 'fs.read'),
    grantedNetwork: splitList(options.net ?? ''),
    roleBindings: parsePairs(options.bind ?? [], '--bind', 'ROLE=TOOL'),
  });
  if (options.out) await writeAtomically(options.out, `${JSON.stringify(descriptor, null, 2)}\n`);

  const refused = descriptor.verdict === 'refuse';
  const jsonRpc = refused ? JSON.stringify(new UnsupportedHarnessError(descriptor).toJsonRpc()) : '';
  return {
    descriptor,
    exitCode: refused ? EXIT.refused : EXIT.ok,
    stdout: options.json ? `${JSON.stringify(descriptor, null, 2)}\n` : formatDescriptor(file, descriptor),
    stderr: refused ? `${jsonRpc}\n` : '',
  };
}

export function register(program: Command): void {
  program
    .command('handshake')
    .description('bind host tools to a cartridge\'s required roles and print the compliance descriptor (exit 3 when refused)')
    .argument('<file>', 'a cartridge, a harness-requirements.json, or a directory containing one')
    .option('--tools <file>', 'host tools as JSON: [{name, inputSchema, grantedScopes, description?, source?}]')
    .addOption(new Option('--mcp <server...>', 'MCP server(s) whose tools are offered (command line or URL)'))
    .addOption(new Option('--model <id>', 'the model the cartridge would run on').env('ACX_MODEL'))
    .addOption(new Option('--context-window <tokens>', 'the model\'s context window in tokens').env('ACX_CONTEXT_WINDOW').argParser(parsePositiveInt))
    .option('--no-tool-use', 'the model cannot call tools')
    .option('--structured-output', 'the model can emit schema-constrained JSON')
    .option('--protocol-revision <rev>', `negotiated MCP revision (default: the MCP server's answer, else ${DEFAULT_PROTOCOL_REVISION})`)
    .option('--grant <tool=scopes>', 'grant scopes to a tool, e.g. shell=exec,fs.read (repeatable)', collect, [])
    .option('--bind <role=tool>', 'bind a role to a tool explicitly, e.g. acx:execute=shell (repeatable)', collect, [])
    .option('--fs <scopes>', 'filesystem scopes the host grants (comma-separated)', 'fs.read')
    .option('--net <scopes>', 'network scopes the host grants (comma-separated)', '')
    .option('--out <file>', 'also write the descriptor to this file (for the preflight self-check)')
    .option('--json', 'print the descriptor as JSON')
    .action(async (file: string, options: HandshakeOptions) => {
      const run = await runHandshake(file, options);
      process.stdout.write(run.stdout);
      if (run.exitCode !== EXIT.ok) throw new CliExit(run.exitCode, run.stderr.trimEnd());
    });
}

async function modelFacts(options: HandshakeOptions, sources: HandshakeSources): Promise<ModelFacts> {
  let described: Partial<ModelFacts> = {};
  if (options.model && options.contextWindow === undefined) described = await sources.describeModel(options.model);
  const contextWindowTokens = options.contextWindow ?? described.contextWindowTokens;
  if (contextWindowTokens === undefined) {
    throw new AcxError('usage', 'The handshake needs the model\'s context window', {
      hint: 'Pass --context-window N (or set ACX_CONTEXT_WINDOW), or --model ID once model look-up is connected.',
    });
  }
  return {
    toolUse: options.toolUse === false ? false : (described.toolUse ?? true),
    contextWindowTokens,
    structuredOutput: options.structuredOutput === true || described.structuredOutput === true,
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

export function formatDescriptor(file: string, d: ComplianceDescriptor): string {
  const mark = (ok: boolean) => (ok ? 'ok  ' : 'FAIL');
  const lines = [`Handshake for ${file}`, `  requirements ${d.requirementsHash}`];
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
  return `${lines.join('\n')}\n`;
}
