// Issue 11 item 4: one `code` union; every error class recognisable across two installed copies
// of acx (Symbol.for markers, as the AI SDK's errors have); the boot refusal is an AcxError that
// carries the compliance descriptor; the CLI maps errors to exit codes in one table.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CommanderError } from 'commander';
import { beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { activateCartridge, gateTrust, loadCartridge } from '../../src/app/boot-cartridge.ts';
import { errorReport, EXIT, exitCodeFor } from '../../src/frontends/cli/output.ts';
import { CartridgeBootRefusal } from '../../src/contract/boot-refusal.ts';
import {
  AcxError,
  type AcxErrorCode,
  ConfigError,
  HarnessCapabilityUnsupportedError,
  PolicyError,
  ReplayMismatchError,
  TurnAbortedError,
} from '../../src/core/errors.ts';
import * as publicApi from '../../src/index.ts';
import { buildTestCartridge, saveDigest, tempDir } from '../support/cartridge-fixtures.ts';

type ErrorsModule = typeof import('../../src/core/errors.ts');

/** A second copy of acx's errors module, loaded from another file: what a second install is. */
let other: ErrorsModule;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'acx-errors-copy-'));
  const copy = join(dir, 'errors.ts');
  copyFileSync(join(import.meta.dirname, '../../src/core/errors.ts'), copy);
  other = (await import(pathToFileURL(copy).href)) as ErrorsModule;
});

describe('recognising errors across two copies of acx', () => {
  it('the copy is a different module: instanceof fails, isInstance succeeds', () => {
    expect(other.PolicyError).not.toBe(PolicyError);
    const foreign = new other.PolicyError('execute is not allowed here');
    expect(foreign instanceof PolicyError).toBe(false);
    expect(foreign instanceof AcxError).toBe(false);
    expect(PolicyError.isInstance(foreign)).toBe(true);
    expect(AcxError.isInstance(foreign)).toBe(true);
    // and the other way round
    expect(other.PolicyError.isInstance(new PolicyError('x'))).toBe(true);
  });

  it('each class has its own marker: a sibling class or a plain Error is not mistaken for it', () => {
    const foreign = new other.HarnessCapabilityUnsupportedError('the claude-code harness cannot suspend a turn');
    expect(HarnessCapabilityUnsupportedError.isInstance(foreign)).toBe(true);
    expect(PolicyError.isInstance(foreign)).toBe(false);
    expect(ConfigError.isInstance(foreign)).toBe(false);
    expect(TurnAbortedError.isInstance(new other.TurnAbortedError())).toBe(true);
    expect(ReplayMismatchError.isInstance(new other.TurnAbortedError())).toBe(false);
    expect(ReplayMismatchError.isInstance(new other.ReplayMismatchError('no recording for this request', 'record again'))).toBe(true);
    for (const value of [new Error('plain'), { code: 'policy', message: 'look-alike' }, null, undefined, 'policy']) {
      expect(AcxError.isInstance(value)).toBe(false);
      expect(PolicyError.isInstance(value)).toBe(false);
    }
  });

  it('the marker stays out of JSON and of the keys a logger walks', () => {
    const error = new PolicyError('no');
    expect(Object.getOwnPropertySymbols(error)).toEqual([Symbol.for('acx.error'), Symbol.for('acx.error.PolicyError')]);
    // a spread copies enumerable symbol keys too: none
    expect(Object.getOwnPropertySymbols({ ...error })).toEqual([]);
    expect(JSON.stringify(error)).toBe('{"code":"policy","name":"PolicyError"}');
  });

  it('narrows on the code, across copies too', () => {
    const caught: unknown = new other.AcxError('session-not-found', 'no session "s9"', { hint: 'list them with `acx sessions`' });
    expect(AcxError.hasCode(caught, 'session-not-found')).toBe(true);
    expect(AcxError.hasCode(caught, 'usage')).toBe(false);
    if (AcxError.hasCode(caught, 'session-not-found')) {
      expectTypeOf(caught.code).toEqualTypeOf<'session-not-found'>();
      expect(caught.describe()).toBe('no session "s9"\n  → list them with `acx sessions`');
    }
    if (AcxError.isInstance(caught)) expectTypeOf(caught.code).toEqualTypeOf<AcxErrorCode>();
  });

});

describe('the code union', () => {
  it('a misspelled code does not compile', () => {
    // @ts-expect-error 'polcy' is not an AcxErrorCode
    const misspelled = new AcxError('polcy', 'x');
    expect(misspelled.code).toBe('polcy');
    const caught: unknown = new PolicyError('x');
    // @ts-expect-error 'sesion-not-found' is not an AcxErrorCode
    expect(AcxError.hasCode(caught, 'sesion-not-found')).toBe(false);
    if (AcxError.isInstance(caught)) {
      // @ts-expect-error comparing with a code outside the union is a type error, not a silent false
      expect(caught.code === 'polic').toBe(false);
    }
  });

  it('the union lists only codes that are thrown somewhere (no stale entries)', () => {
    const src = join(import.meta.dirname, '../../src');
    const union = readFileSync(join(src, 'core/errors.ts'), 'utf8').split('export type AcxErrorCode =')[1]!.split(';')[0]!;
    const codes = [...union.matchAll(/\| '([a-z-]+)'/g)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(100);
    // Each code quoted once more outside its union line (a throw, a super() or a table entry);
    // the refusals' codes are `cartridge-${kind}` with the kind quoted in BootRefusalKind.
    const text = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => readFileSync(join(src, file), 'utf8'))
      .join('\n')
      .replace(union, '');
    const refusalKinds = readFileSync(join(src, 'contract/boot-refusal.ts'), 'utf8');
    const unused = codes.filter((code) => !text.includes(`'${code}'`) && !(code.startsWith('cartridge-') && refusalKinds.includes(`'${code.slice('cartridge-'.length)}'`)));
    expect(unused).toEqual([]);
  });

});

describe('the public API', () => {
  it('the package exports the errors a caller narrows on', () => {
    for (const name of ['AcxError', 'ConfigError', 'PolicyError', 'HarnessCapabilityUnsupportedError', 'TurnAbortedError', 'ReplayMismatchError', 'CartridgeBootRefusal', 'UnsupportedHarnessError', 'ProviderError']) {
      expect(typeof (publicApi as Record<string, unknown>)[name], name).toBe('function');
    }
    expect(publicApi.TurnAbortedError).toBe(TurnAbortedError);
    expect(publicApi.CartridgeBootRefusal).toBe(CartridgeBootRefusal);
  });
});

describe('the boot refusal', () => {
  it('is an AcxError that carries the compliance descriptor it was decided on; nothing was written', () => {
    const built = buildTestCartridge(tempDir('acx-errors-boot-'));
    const { rom } = loadCartridge(built.path, { registry: built.registry });
    const before = saveDigest(built.path);
    let refusal: unknown;
    try {
      activateCartridge({ rom, tools: [], mcpServers: [], model: { toolUse: true, contextWindowTokens: 128_000, structuredOutput: false } });
    } catch (error) {
      refusal = error;
    }
    expect(saveDigest(built.path)).toBe(before);
    expect(CartridgeBootRefusal.isInstance(refusal)).toBe(true);
    if (!CartridgeBootRefusal.isInstance(refusal)) return;
    expect(AcxError.isInstance(refusal)).toBe(true);
    expect(refusal.code).toBe('cartridge-unsupported-harness');
    expect(refusal.kind).toBe('unsupported-harness');
    expect(refusal.descriptor?.verdict).toBe('refuse');
    expect(refusal.descriptor?.unmet).toContain('tool:acx:execute');
    expect(refusal.message.split('\n')[0]).toBe(`${built.path} was not activated: Unsupported harness: the host does not meet ${refusal.descriptor?.unmet.join(', ')}`);
    // The JSON-RPC refusal a program reads ends the text (SPEC §8.5).
    const lastLine = JSON.parse(refusal.describe().split('\n').at(-1)!) as { code: number; message: string; data: { unmet: string[] } };
    expect(lastLine).toMatchObject({ code: -32602, message: 'Unsupported harness', data: { unmet: refusal.descriptor?.unmet } });
    expect(exitCodeFor(refusal)).toBe(EXIT.refused);
  });

  it('a tampered cartridge is refused with exit 4, an untrusted one with 3', () => {
    const verdict = (v: 'tampered' | 'portable') => ({ verdict: v, reasons: ['signature does not match'], warnings: [], manifestHash: null });
    const refusalOf = (fn: () => void): unknown => {
      try {
        fn();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const tampered = refusalOf(() => gateTrust(verdict('tampered'), 'x.acx', {}));
    expect(errorReport(tampered)).toMatchObject({
      exitCode: EXIT.tampered,
      code: 'cartridge-tampered',
      message: 'x.acx is tampered and will not run:\n  signature does not match',
      hint: 'Do not use this file; get a fresh copy from its publisher.',
    });
    expect(errorReport(refusalOf(() => gateTrust(verdict('portable'), 'x.acx', {})))).toMatchObject({ exitCode: EXIT.refused, code: 'cartridge-untrusted' });
  });
});

describe('the CLI exit-code table', () => {
  it('maps codes to the documented exit codes, for errors of any copy of acx', () => {
    expect(exitCodeFor(new other.AcxError('usage', 'acx run: give a prompt'))).toBe(EXIT.usage);
    expect(exitCodeFor(new other.AcxError('cartridge-tampered', 'rejected'))).toBe(EXIT.tampered);
    expect(exitCodeFor(new AcxError('scrub-blocked', 'blocked'))).toBe(EXIT.refused);
    expect(exitCodeFor(new other.ConfigError('no agent.json'))).toBe(EXIT.failure);
    expect(exitCodeFor(new Error('a bug'))).toBe(EXIT.failure);
    expect(exitCodeFor(new CommanderError(1, 'commander.unknownOption', "unknown option '--x'"))).toBe(EXIT.usage);
    expect(exitCodeFor(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toBe(EXIT.ok);
  });

  it('a user mistake is one clear line and a hint, no stack; a bug says so', () => {
    expect(errorReport(new ConfigError('/x is not an acx agent directory (no agent.json).', { hint: 'Create one with `acx init /x`.' }))).toMatchObject({
      exitCode: EXIT.failure,
      code: 'config',
      message: '/x is not an acx agent directory (no agent.json).',
      hint: 'Create one with `acx init /x`.',
    });
    expect(errorReport(new TypeError('x is undefined'))).toMatchObject({ exitCode: EXIT.failure, code: 'internal', message: 'unexpected error: x is undefined' });
  });
});
