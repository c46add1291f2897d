/** A duration as log lines write it: seconds with two decimals and a unit (`61.00s`). */
export function logSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}
