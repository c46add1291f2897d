// A seeded random source (mulberry32), so a run's schedule of posts and faults can be replayed
// with --seed. The processes' own timing is not seeded: a replay repeats the plan, not the race.
export interface Random {
  next(): number;
  between(low: number, high: number): number;
  pick<T>(items: readonly T[]): T;
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    between: (low, high) => low + (high - low) * next(),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}
