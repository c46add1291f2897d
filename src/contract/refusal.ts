import { AcxError, errorMarker, setMarker } from '../core/errors.ts';
import type { ComplianceDescriptor } from './descriptor.ts';

/**
 * Refusal (SPEC §8.5 step 5): the JSON-RPC error reuses MCP's form for a failed handshake —
 * code -32602 (Invalid params), message "Unsupported harness" — with data {unmet, supported,
 * requested}. `requested` lists every requirement id the manifest makes, `supported` those the
 * host met, `unmet` those it did not (so unmet = requested − supported).
 */

export const UNSUPPORTED_HARNESS_CODE = -32602;
export const UNSUPPORTED_HARNESS_MESSAGE = 'Unsupported harness';

export interface UnsupportedHarnessData {
  unmet: string[];
  supported: string[];
  requested: string[];
}

export interface JsonRpcError<DATA = unknown> {
  code: number;
  message: string;
  data: DATA;
}

const UNSUPPORTED_HARNESS_MARKER = errorMarker('UnsupportedHarnessError');

export class UnsupportedHarnessError extends AcxError {
  readonly descriptor: ComplianceDescriptor;
  readonly data: UnsupportedHarnessData;

  constructor(descriptor: ComplianceDescriptor) {
    const data = refusalData(descriptor);
    const details = descriptor.checks
      .filter((c) => !c.met)
      .map((c) => `  ${c.id}: requested ${c.requested}, offered ${c.offered}`)
      .join('\n');
    const summary = data.unmet.length > 0 ? `the host does not meet ${data.unmet.join(', ')}` : `the descriptor's verdict is "${descriptor.verdict}"`;
    super('unsupported-harness', `${UNSUPPORTED_HARNESS_MESSAGE}: ${summary}${details ? `\n${details}` : ''}`, {
      hint: 'The cartridge was not activated and its SAVE zone was not touched. Offer the missing tools or scopes (or bind roles explicitly), use a model that meets the floors, then run the handshake again.',
    });
    setMarker(this, UNSUPPORTED_HARNESS_MARKER);
    this.name = 'UnsupportedHarnessError';
    this.descriptor = descriptor;
    this.data = data;
  }

  toJsonRpc(): JsonRpcError<UnsupportedHarnessData> {
    return {
      code: UNSUPPORTED_HARNESS_CODE,
      message: UNSUPPORTED_HARNESS_MESSAGE,
      data: { unmet: [...this.data.unmet], supported: [...this.data.supported], requested: [...this.data.requested] },
    };
  }

  static override isInstance(error: unknown): error is UnsupportedHarnessError {
    return AcxError.hasMarker(error, UNSUPPORTED_HARNESS_MARKER);
  }
}

export function refusalData(descriptor: ComplianceDescriptor): UnsupportedHarnessData {
  const checks = descriptor.checks ?? [];
  return {
    unmet: [...descriptor.unmet],
    supported: checks.filter((c) => c.met).map((c) => c.id),
    requested: checks.length > 0 ? checks.map((c) => c.id) : [...descriptor.unmet],
  };
}

/** Throws UnsupportedHarnessError unless the descriptor's verdict is "accept" with nothing unmet. */
export function assertAccepted(descriptor: ComplianceDescriptor): void {
  if (descriptor.verdict !== 'accept' || descriptor.unmet.length > 0) throw new UnsupportedHarnessError(descriptor);
}
