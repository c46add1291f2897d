/**
 * `fn` on every item, at most `limit` at once, the results in the items' order (the first
 * failure rejects). For the independent cases of one test that each wait on real processes:
 * side by side they take a fraction of the time, and the number at once stays bounded.
 */
export async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
