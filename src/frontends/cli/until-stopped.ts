/**
 * How a serving command (`acx router`, `acx platform serve`) lives: it announces itself (prints
 * its URL), serves until SIGINT or SIGTERM, then stops cleanly. The handlers are in place before
 * the announcement: a supervisor or a test may send SIGTERM the moment it reads the URL, and a
 * signal that arrived first would end the process without `stop` (its work unfinished).
 */
export function untilStopped(announce: () => void, stop: () => Promise<unknown>): Promise<void> {
  const stopped = new Promise<void>((resolve) => {
    const onSignal = () => void stop().then(() => resolve());
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  announce();
  return stopped;
}
