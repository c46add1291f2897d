import { AcxError } from '../core/errors.ts';
import type { GuardrailBinding, RequirementCheck } from './descriptor.ts';
import { guardrailNameOf, type GuardrailRequirement } from './requirements.ts';

/**
 * Guardrail roles in the handshake (issue 33): a manifest's `acx:guardrail.<name>` role is bound
 * to the host guardrail with that name and the role's kind, negotiated like a tool role — a
 * required role left unbound refuses activation (`guardrail:<role>`), an optional one is listed
 * in optionalAbsent (the agent runs degraded). Pure: the host says what it offers.
 */

/** A guardrail the host can run, as the handshake sees it. */
export interface HostGuardrail {
  name: string;
  kind: 'input' | 'output' | 'tool';
}

const KINDS: ReadonlySet<string> = new Set(['input', 'output', 'tool']);

export function bindGuardrails(requirements: readonly GuardrailRequirement[], offered: readonly HostGuardrail[]): GuardrailBinding[] {
  checkHostGuardrails(offered);
  return requirements.map((requirement) => {
    const name = guardrailNameOf(requirement.role);
    const { role, tier, kind } = requirement;
    if (offered.some((g) => g.name === name && g.kind === kind)) return { role, tier, kind, boundGuardrail: name, satisfied: true };
    const other = offered.find((g) => g.name === name);
    const reason = other
      ? `the host's guardrail "${name}" checks ${other.kind}, the role needs one that checks ${kind}`
      : `the host offers no ${kind} guardrail named "${name}" (offered: ${offered.map((g) => `${g.name} (${g.kind})`).join(', ') || 'none'})`;
    return { role, tier, kind, boundGuardrail: null, satisfied: false, reasons: [reason] };
  });
}

/** The checklist rows of the required guardrail roles. */
export function guardrailChecks(bindings: readonly GuardrailBinding[]): RequirementCheck[] {
  return bindings
    .filter((b) => b.tier === 'required')
    .map((b) => ({
      id: `guardrail:${b.role}`,
      requested: `a ${b.kind} guardrail "${guardrailNameOf(b.role)}"`,
      offered: b.satisfied ? b.boundGuardrail! : `unbound (${b.reasons?.join('; ')})`,
      met: b.satisfied,
    }));
}

function checkHostGuardrails(offered: readonly HostGuardrail[]): void {
  const seen = new Set<string>();
  for (const guardrail of offered) {
    if (typeof guardrail?.name !== 'string' || guardrail.name === '' || !KINDS.has(guardrail.kind)) {
      throw new AcxError('contract-host-tools', `A host guardrail is malformed: ${JSON.stringify(guardrail)}`, {
        hint: "Describe each as { name: 'pii', kind: 'input' | 'output' | 'tool' }.",
      });
    }
    const key = `${guardrail.kind} ${guardrail.name}`;
    if (seen.has(key)) throw new AcxError('contract-host-tools', `Two host ${guardrail.kind} guardrails are named "${guardrail.name}"`);
    seen.add(key);
  }
}
