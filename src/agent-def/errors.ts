import { AcxError } from '../core/errors.ts';

/** An agent definition (a directory or a cartridge's ROM) that acx cannot read: what is wrong, and what to do. */
export function definitionError(message: string, hint?: string): AcxError {
  return new AcxError('agent-definition', message, hint ? { hint } : {});
}
