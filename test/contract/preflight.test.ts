import { describe, expect, it } from 'vitest';
import { negotiate } from '../../src/contract/negotiate.ts';
import { PreflightRefusedError, assertPreflight, preflightCheck } from '../../src/contract/preflight.ts';
import { goodHost, manifestBytes, matchingTools } from './helpers.ts';

const persisted = (overrides = {}) => JSON.stringify(negotiate(goodHost(overrides)), null, 2);

describe('preflight self-check', () => {
  it('lets an accepted descriptor for this exact manifest through', () => {
    const descriptor = assertPreflight(persisted(), manifestBytes());
    expect(descriptor.verdict).toBe('accept');
    expect(preflightCheck(new TextEncoder().encode(persisted()), manifestBytes())).toMatchObject({ ok: true, reasons: [] });
  });

  it('refuses when the manifest bytes changed (hash mismatch), even by whitespace', () => {
    const changed = `${new TextDecoder().decode(manifestBytes())}\n`;
    const result = preflightCheck(persisted(), changed);
    expect(result.ok).toBe(false);
    expect(result.reasons[0]).toMatch(/the descriptor was made for manifest sha256:[0-9a-f]{64}, but this cartridge's manifest is sha256:/);
  });

  it('refuses a descriptor that shows an unsatisfied required binding', () => {
    const refused = persisted({ hostTools: matchingTools().filter((t) => t.name !== 'search_memory') });
    expect(() => assertPreflight(refused, manifestBytes())).toThrow(PreflightRefusedError);
    expect(preflightCheck(refused, manifestBytes()).reasons).toContain('required role acx:search is not satisfied');
  });

  it('refuses a hand-edited descriptor that claims accept but shows satisfied:false', () => {
    const d = JSON.parse(persisted());
    d.bindings[1].satisfied = false;
    const result = preflightCheck(d, manifestBytes());
    expect(result.ok).toBe(false);
    expect(result.reasons).toEqual(['required role acx:dispatch is not satisfied']);
  });

  it('refuses a descriptor with a required binding removed', () => {
    const d = JSON.parse(persisted());
    d.bindings = d.bindings.filter((b: { role: string }) => b.role !== 'acx:execute');
    expect(preflightCheck(d, manifestBytes()).reasons).toEqual(['required role acx:execute has no binding']);
  });

  it('re-derives the floors from the recorded facts', () => {
    const d = JSON.parse(persisted());
    d.model.contextWindowTokens = 4096;
    expect(preflightCheck(d, manifestBytes()).reasons).toEqual([
      'model.minContextWindowTokens: requested >= 100000, the descriptor records 4096',
    ]);
  });

  it('an unbound optional role does not block activation', () => {
    const d = persisted({ hostTools: matchingTools().filter((t) => t.name !== 'list_agents') });
    expect(preflightCheck(d, manifestBytes()).ok).toBe(true);
  });

  it('reports a descriptor that is not JSON or not a descriptor', () => {
    expect(preflightCheck('{not json', manifestBytes()).reasons[0]).toMatch(/not valid JSON/);
    expect(preflightCheck({ schemaVersion: 'acx.harness.compliance.v0' }, manifestBytes()).reasons.join('\n')).toMatch(/malformed/);
  });

  it('the refusal says what to do next', () => {
    try {
      assertPreflight(persisted({ grantedFilesystem: [] }), manifestBytes());
      throw new Error('expected refusal');
    } catch (error) {
      const e = error as PreflightRefusedError;
      expect(e.code).toBe('preflight-refused');
      expect(e.reasons).toContain('filesystem:fs.read was not granted');
      expect(e.describe()).toContain('acx handshake');
    }
  });
});
