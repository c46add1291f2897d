import { timingSafeEqual } from 'node:crypto';
import { AcxError, errorMarker, setMarker } from '../core/errors.ts';
import { checkComplianceDescriptor, type ComplianceDescriptor } from './descriptor.ts';
import { assertProtocolRevision, floorChecks } from './negotiate.ts';
import { parseHarnessRequirements, toBytes } from './requirements.ts';

/**
 * The preflight self-check (SPEC §8.5 step 6): right before activation, re-read the persisted
 * compliance descriptor and refuse unless it belongs to this exact manifest and shows every
 * required role bound and satisfied. A host that mis-advertised (or a hand-edited descriptor)
 * cannot start a starved agent.
 */

export interface PreflightResult {
  ok: boolean;
  /** Why activation must not proceed; empty when ok. */
  reasons: string[];
  /** The descriptor, when it could be read. */
  descriptor?: ComplianceDescriptor;
}

const PREFLIGHT_REFUSED_MARKER = errorMarker('PreflightRefusedError');

export class PreflightRefusedError extends AcxError {
  readonly reasons: string[];
  constructor(reasons: string[]) {
    super('preflight-refused', `Activation refused by the preflight self-check:\n${reasons.map((r) => `  ${r}`).join('\n')}`, {
      hint: 'Run the handshake again against this cartridge (acx handshake FILE) and persist the new descriptor; nothing was activated.',
    });
    setMarker(this, PREFLIGHT_REFUSED_MARKER);
    this.name = 'PreflightRefusedError';
    this.reasons = reasons;
  }

  static override isInstance(error: unknown): error is PreflightRefusedError {
    return AcxError.hasMarker(error, PREFLIGHT_REFUSED_MARKER);
  }
}

/**
 * Checks a persisted descriptor (its JSON text/bytes, or an already-parsed value) against the
 * current manifest bytes. Never throws for a bad descriptor: the reasons say what is wrong.
 * A malformed manifest still throws HarnessRequirementsError.
 */
export function preflightCheck(descriptorInput: string | Uint8Array | unknown, manifestBytes: Uint8Array | string): PreflightResult {
  let value: unknown = descriptorInput;
  if (typeof descriptorInput === 'string' || descriptorInput instanceof Uint8Array) {
    try {
      value = JSON.parse(typeof descriptorInput === 'string' ? descriptorInput : new TextDecoder().decode(descriptorInput));
    } catch (error) {
      return { ok: false, reasons: [`the compliance descriptor is not valid JSON (${(error as Error).message})`] };
    }
  }
  const shapeProblems = checkComplianceDescriptor(value);
  if (shapeProblems.length > 0) {
    return { ok: false, reasons: shapeProblems.map((p) => `the compliance descriptor is malformed at ${p}`) };
  }
  const descriptor = value as ComplianceDescriptor;
  const { manifest, requirementsHash } = parseHarnessRequirements(toBytes(manifestBytes));
  const reasons: string[] = [];

  if (!sameDigest(descriptor.requirementsHash, requirementsHash)) {
    reasons.push(`the descriptor was made for manifest ${descriptor.requirementsHash}, but this cartridge's manifest is ${requirementsHash}`);
  }
  if (descriptor.verdict !== 'accept') reasons.push(`the descriptor's verdict is "${descriptor.verdict}"`);
  if (descriptor.unmet.length > 0) reasons.push(`the descriptor lists unmet requirements: ${descriptor.unmet.join(', ')}`);

  // The manifest, not the descriptor, says which roles are required.
  for (const contract of manifest.requiredTools) {
    const binding = descriptor.bindings.find((b) => b.role === contract.role);
    if (!binding) reasons.push(`required role ${contract.role} has no binding`);
    else if (!binding.satisfied || binding.boundTool === null) reasons.push(`required role ${contract.role} is not satisfied`);
  }
  for (const binding of descriptor.bindings) {
    if (binding.tier === 'required' && !binding.satisfied && !manifest.requiredTools.some((c) => c.role === binding.role)) {
      reasons.push(`required binding ${binding.role} is not satisfied`);
    }
  }
  for (const requirement of manifest.guardrails ?? []) {
    if (requirement.tier !== 'required') continue;
    const binding = descriptor.guardrails?.find((b) => b.role === requirement.role);
    if (!binding || !binding.satisfied || binding.boundGuardrail === null) reasons.push(`required guardrail ${requirement.role} is not bound`);
  }
  // Re-derive the floor verdicts from the facts the descriptor records.
  try {
    assertProtocolRevision(descriptor.protocolRevision, 'the descriptor');
    const model = { ...descriptor.model, structuredOutput: descriptor.model.structuredOutput ?? false };
    for (const check of floorChecks(manifest, descriptor.protocolRevision, model)) {
      if (!check.met) reasons.push(`${check.id}: requested ${check.requested}, the descriptor records ${check.offered}`);
    }
  } catch (error) {
    reasons.push((error as Error).message);
  }
  for (const [area, granted] of [['filesystem', descriptor.filesystem], ['network', descriptor.network]] as const) {
    for (const scope of manifest[area] ?? []) {
      if (!(granted ?? []).includes(scope)) reasons.push(`${area}:${scope} was not granted`);
    }
  }
  return { ok: reasons.length === 0, reasons, descriptor };
}

/** Like preflightCheck, but throws PreflightRefusedError; returns the descriptor when ok. */
export function assertPreflight(descriptorInput: string | Uint8Array | unknown, manifestBytes: Uint8Array | string): ComplianceDescriptor {
  const result = preflightCheck(descriptorInput, manifestBytes);
  if (!result.ok) throw new PreflightRefusedError(result.reasons);
  return result.descriptor!;
}

function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
