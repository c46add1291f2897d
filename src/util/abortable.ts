/**
 * Waits for `work`, or rejects with the signal's reason as soon as it aborts. The work itself goes
 * on (another caller may still be waiting for it); only this wait ends.
 */
export async function untilSettledOrAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}
