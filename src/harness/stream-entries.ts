import { AcxError, type AcxErrorCode } from '../core/errors.ts';
import type { HarnessStreamPart } from '../engine/events.ts';
import { scrubSecrets } from '../util/scrub.ts';

/**
 * A turn's parts as its kept stream holds them, one stored part each: JSON, with the error of an
 * error part kept as its words (credentials scrubbed, as in every persisted error) and, for acx's
 * own errors, their code and hint, so that it reads back as the same kind of error.
 */
interface KeptError {
  message: string;
  code?: string;
  hint?: string;
}

export function encodePart(part: HarnessStreamPart): string {
  switch (part.type) {
    case 'error':
      return JSON.stringify({ type: 'error', error: keptError(part.error) });
    case 'tool-error':
    case 'retry':
      return JSON.stringify({ ...part, error: scrubSecrets(part.error) });
    default:
      return JSON.stringify(part);
  }
}

export function decodePart(body: string): HarnessStreamPart {
  const part = JSON.parse(body) as HarnessStreamPart;
  return part.type === 'error' ? { type: 'error', error: revived(part.error as KeptError) } : part;
}

function keptError(error: unknown): KeptError {
  if (AcxError.isInstance(error)) return { message: scrubSecrets(error.message), code: error.code, ...(error.hint ? { hint: scrubSecrets(error.hint) } : {}) };
  return { message: scrubSecrets(error instanceof Error ? error.message : String(error)) };
}

/** The kept error as an error again: an AcxError stays one, so `uiErrorText` shows it in its words. */
function revived(kept: KeptError): Error {
  if (kept.code) return new AcxError(kept.code as AcxErrorCode, kept.message, kept.hint ? { hint: kept.hint } : {});
  return new Error(kept.message);
}
