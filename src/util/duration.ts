/** A duration as log lines write it: seconds with two decimals and a unit (`61.00s`). */
export function logSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `30s`, `5m`, `1h`, `500ms`, or a bare number of seconds, in ms; undefined when it is none of those. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] ?? 's']!;
}
