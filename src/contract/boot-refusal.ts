import { AcxError, errorMarker, setMarker } from '../core/errors.ts';
import type { ComplianceDescriptor } from './descriptor.ts';

/** Why a cartridge's boot stopped before its ROM was activated. */
export type BootRefusalKind = 'tampered' | 'untrusted' | 'unsupported-harness' | 'preflight';

const BOOT_REFUSAL_MARKER = errorMarker('CartridgeBootRefusal');

/**
 * The boot stopped before the ROM was activated (nothing ran, SAVE untouched). `message` says
 * what happened, `hint` what to do; a refusal by the handshake or the preflight self-check
 * carries the compliance descriptor it was decided on. Its code is `cartridge-<kind>`: the CLI
 * exits 4 for `tampered` and 3 for the others (src/frontends/cli/exit-codes.ts).
 */
export class CartridgeBootRefusal extends AcxError {
  declare readonly code: `cartridge-${BootRefusalKind}`;
  readonly kind: BootRefusalKind;
  readonly descriptor: ComplianceDescriptor | undefined;

  constructor(kind: BootRefusalKind, message: string, options: { hint: string; descriptor?: ComplianceDescriptor }) {
    super(`cartridge-${kind}`, message, { hint: options.hint });
    setMarker(this, BOOT_REFUSAL_MARKER);
    this.name = 'CartridgeBootRefusal';
    this.kind = kind;
    this.descriptor = options.descriptor;
  }

  static override isInstance(error: unknown): error is CartridgeBootRefusal {
    return AcxError.hasMarker(error, BOOT_REFUSAL_MARKER);
  }
}
