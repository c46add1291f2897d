import { spawn } from 'node:child_process';
// Issue 11 item 4: the CLI maps errors to exit codes in one table (src/frontends/cli/exit-codes.ts). Real
// runs of the documented codes, in the paths that used to decide their own code: 2 for a usage
// mistake (the parser's or a command's), 3 for a refusal, 4 for a tampered cartridge — each a
// clear message and hint with no stack trace.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { alteredCopy, buildTestCartridge, type BuiltCartridge, runAcx, tempDir } from '../support/cartridge-fixtures.ts';
import { ROOT, STACK_FRAME } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

let root: string;
let base: BuiltCartridge;
let tampered: string;

beforeAll(() => {
  root = tempDir('acx-e2e-exit-');
  base = buildTestCartridge(root, { name: 'base' });
  tampered = alteredCopy(base.path, join(root, 'tampered.acx'), (db) => db.exec("UPDATE sqlar SET data = CAST('You are someone else.' AS BLOB) WHERE name = 'rom/prompts/system-prompt.md'"));
});

describe.concurrent('exit codes (e2e)', { timeout: scaled(120_000) }, () => {
  it('4: acx handshake on a tampered cartridge says so, with what to do', async () => {
    const run = await runAcx(['handshake', tampered, '--registry', base.registry, '--context-window', '200000'], {}, { fresh: true });
    expect(run.code).toBe(EXIT.tampered);
    expect(run.stderr).toMatch(new RegExp(`^acx: ${tampered.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is tampered; its manifest is not negotiated: .+\n  → Do not use this file; get a fresh copy from its publisher.\n$`));
    expect(run.stdout).toBe('');
  });

  it('4 under --json too: one JSON error object naming the code', async () => {
    const run = await runAcx(['handshake', tampered, '--registry', base.registry, '--context-window', '200000', '--json'], {}, { fresh: true });
    expect(run.code).toBe(EXIT.tampered);
    const { error } = JSON.parse(run.stdout) as { error: { code: string; message: string; hint: string } };
    expect(error.code).toBe('cartridge-tampered');
    expect(error.hint).toBe('Do not use this file; get a fresh copy from its publisher.');
  });

  it('3: acx run on a cartridge whose key is not trusted; nothing ran', async () => {
    const run = await runAcx(['run', base.path, 'hello', '--model', 'openai:gpt-4o-mini'], { ACX_HOME: join(root, 'home-untrusted'), ACX_CONFIG_HOME: join(root, 'home-untrusted') }, { fresh: true });
    expect(run.code).toBe(EXIT.refused);
    expect(run.stderr).toContain(`acx: ${base.path} is portable, not trusted:`);
    expect(run.stderr).toContain('  → Add the publisher\'s public key to a trust registry');
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });

  it('2: a command\'s own usage check, in the two-line form', async () => {
    const run = await runAcx(['cleanup', join(ROOT, 'examples/notes-keeper')], { ACX_HOME: join(root, 'home-cleanup') }, { fresh: true });
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toBe('acx: give exactly one of --session <id>, --idle-days <n>, --sweep or --timeline <uuid>.\n  → run `acx cleanup --help` for its usage\n');
  });

  // Each usage error the argument parser finds, worded by acx (never commander's own lines), exit 2.
  const parserErrors: Array<[string[], string]> = [
    [['run', 'x', 'hi', '--hme', 'h'], 'acx: unknown option --hme for acx run (did you mean --home?)\n  → run `acx run --help` for its usage\n'],
    [['rn'], "acx: unknown command 'rn' (did you mean run?)\n  → run `acx help` for the list of commands\n"],
    [['trust', 'ad'], "acx: unknown command 'ad' (did you mean add?)\n  → run `acx trust --help` for its usage\n"],
    [['run', 'x', 'hi', '--permission-mode', 'all'], 'acx: --permission-mode takes allow-reads, allow-edits or allow-all, not "all"\n  → run `acx run --help` for its usage\n'],
    [['verify'], 'acx: missing <file> (usage: acx verify [options] <file>)\n  → run `acx verify --help` for its usage\n'],
    [['run', 'x', 'hi', '--max-steps', 'abc'], 'acx: --max-steps: must be a positive whole number (got "abc")\n  → run `acx run --help` for its usage\n'],
    [['run', 'x', 'hi', '--model'], 'acx: --model needs a value\n  → run `acx run --help` for its usage\n'],
    [['build', 'x'], 'acx: --out is required\n  → run `acx build --help` for its usage\n'],
  ];
  for (const [args, stderr] of parserErrors) {
    it(`2: acx ${args.join(' ')}`, async () => {
      const run = await runAcx(args, {}, { fresh: true });
      expect(run.code).toBe(EXIT.usage);
      expect(run.stderr).toBe(stderr);
    });
  }

  it('0: a reader that stops early (`acx help | head`) ends acx quietly, with no stack trace', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/acx.js'), 'help'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // every write acx makes now meets a closed pipe (EPIPE)
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(EXIT.ok);
  });

  it('2: a model spec that cannot parse, with what to write', async () => {
    const run = await runAcx(['run', 'x', 'hi', '--model', 'gpt4'], {}, { fresh: true });
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toMatch(/^acx: --model: "gpt4" is not a model spec\.\n {2}→ Write provider:model-id, e\.g\. openai:gpt-5\.4-mini/);
  });

  it('2: an unknown command, found by the argument parser', async () => {
    const run = await runAcx(['no-such-command'], {}, { fresh: true });
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toContain("unknown command 'no-such-command'");
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });
});
