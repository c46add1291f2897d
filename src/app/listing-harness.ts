import { AcxError } from '../core/errors.ts';
import type { Harness } from '../harness/harness.ts';

// Apart from default-host.ts (the default-host check, with the contract and cartridge spec
// behind it): every run's dispatch tool starts from this harness.

/** A harness that is never asked to run: tools assembled for a description only need to be listed. */
export const listingHarness: Harness = {
  id: 'handshake',
  openSession: async () => {
    throw new AcxError('not-running', 'This tool set was assembled for a handshake and cannot run turns.');
  },
};
