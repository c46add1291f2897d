import { CliExit } from './output.ts';

/**
 * A wake stopped because its lease was lost exits non-zero, so whoever delivered its event tries
 * again: the retry finds the session busy (another wake took it over and answers the event) or
 * free (nobody did: the store was unreachable for a while) and answers it itself.
 */
export function leaseLostExit(what: string): CliExit {
  return new CliExit('lease-lost', `acx wake: stopped: this wake's lease on ${what} was lost (not renewed in time), so another wake may be answering it; what it was answering stays pending. Run the wake again: it answers what is still pending, or finds it busy.`);
}
