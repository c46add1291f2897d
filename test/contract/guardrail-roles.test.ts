// Issue 33 §1: a cartridge names the guardrails its agent needs (`acx:guardrail.<name>` roles in
// its harness requirements), negotiated like tool roles: the host binds a guardrail of that name
// and kind, or reports it absent — optional: accepted and listed in optionalAbsent; required:
// refused. Pure functions over manifest bytes, as the handshake runs them.
import { describe, expect, it } from 'vitest';
import { negotiate } from '../../src/contract/negotiate.ts';
import { preflightCheck } from '../../src/contract/preflight.ts';
import { UnsupportedHarnessError } from '../../src/contract/refusal.ts';
import { type GuardrailRequirement, HarnessRequirementsError, parseHarnessRequirements } from '../../src/contract/requirements.ts';
import { goodHost, manifestBytes } from './helpers.ts';

const pii: GuardrailRequirement = { role: 'acx:guardrail.pii', tier: 'optional', kind: 'input', description: 'Keeps personal data out of prompts.' };
const withGuardrails = (...guardrails: GuardrailRequirement[]) => manifestBytes((m) => void (m.guardrails = guardrails));

describe('guardrail roles in the manifest', () => {
  it('parses them, and names what is wrong with a malformed one', () => {
    expect(parseHarnessRequirements(withGuardrails(pii)).manifest.guardrails).toEqual([pii]);
    const bad = withGuardrails({ ...pii, role: 'acx:pii' }, { ...pii, role: 'acx:guardrail.other', kind: 'speech' as never }, pii, pii);
    let problems: unknown;
    try {
      parseHarnessRequirements(bad);
    } catch (error) {
      expect(HarnessRequirementsError.isInstance(error)).toBe(true);
      problems = (error as HarnessRequirementsError).problems;
    }
    expect(problems).toEqual([
      { path: '/guardrails/0/role', problem: 'must be a guardrail role, acx:guardrail.<name> (e.g. "acx:guardrail.pii")' },
      { path: '/guardrails/1/kind', problem: 'must be one of ["input","output","tool"]' },
      { path: '/guardrails/3/role', problem: 'duplicate role acx:guardrail.pii (already declared at /guardrails/2)' },
    ]);
  });
});

describe('negotiating guardrail roles', () => {
  it('binds a host guardrail with the role’s name and kind', () => {
    const d = negotiate(goodHost({ manifestBytes: withGuardrails(pii), hostGuardrails: [{ name: 'pii', kind: 'input' }] }));
    expect(d.verdict).toBe('accept');
    expect(d.guardrails).toEqual([{ role: 'acx:guardrail.pii', tier: 'optional', kind: 'input', boundGuardrail: 'pii', satisfied: true }]);
    expect(d.optionalAbsent).toEqual([]);
    expect(preflightCheck(JSON.stringify(d), withGuardrails(pii)).ok).toBe(true);
  });

  it('an optional role the host cannot bind: accepted, the agent runs degraded, and the descriptor says why', () => {
    const d = negotiate(goodHost({ manifestBytes: withGuardrails(pii), hostGuardrails: [{ name: 'pii', kind: 'output' }] }));
    expect(d.verdict).toBe('accept');
    expect(d.optionalAbsent).toEqual(['acx:guardrail.pii']);
    expect(d.guardrails![0]).toMatchObject({ boundGuardrail: null, satisfied: false, reasons: ['the host\'s guardrail "pii" checks output, the role needs one that checks input'] });
    expect(preflightCheck(JSON.stringify(d), withGuardrails(pii)).ok).toBe(true);
  });

  it('a required role the host cannot bind refuses activation (guardrail:<role>), and the preflight refuses a descriptor without it', () => {
    const required = { ...pii, tier: 'required' as const };
    const d = negotiate(goodHost({ manifestBytes: withGuardrails(required) }));
    expect(d.verdict).toBe('refuse');
    expect(d.unmet).toEqual(['guardrail:acx:guardrail.pii']);
    expect(new UnsupportedHarnessError(d).toJsonRpc().data.unmet).toEqual(['guardrail:acx:guardrail.pii']);
    const accepted = negotiate(goodHost({ manifestBytes: withGuardrails(required), hostGuardrails: [{ name: 'pii', kind: 'input' }] }));
    expect(accepted.verdict).toBe('accept');
    const forged = { ...accepted, guardrails: [] };
    expect(preflightCheck(JSON.stringify(forged), withGuardrails(required)).reasons).toEqual(['required guardrail acx:guardrail.pii is not bound']);
  });

  it('a manifest without guardrail roles gives the descriptor it always did', () => {
    expect('guardrails' in negotiate(goodHost({ hostGuardrails: [{ name: 'pii', kind: 'input' }] }))).toBe(false);
  });
});
