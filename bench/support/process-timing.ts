import { performance } from 'node:perf_hooks';
import { childCpuMs } from './child-cpu.ts';

/**
 * Timing whole child processes against an anchor measured in the same run (bench/README.md):
 * rounds in rotated order, then one table of median wall time and mean CPU time, each with its
 * ratio to the anchor. Shared by the start-up benchmarks.
 */
export interface Timing {
  wall: number;
  /** User + system time of the waited-for process tree; undefined off Linux. */
  cpu: number | undefined;
}

export interface Timings {
  walls: number[];
  cpus: number[];
}

/** Wall time of `run` (which runs a child process to its end) and the CPU its children used. */
export function timeChild(run: () => void): Timing {
  const cpu0 = childCpuMs();
  const start = performance.now();
  run();
  const wall = performance.now() - start;
  const cpu1 = childCpuMs();
  return { wall, cpu: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
}

/** Each once to warm the caches, then `runs` rounds, the order rotated every round. */
export function rotatedRounds<N extends string>(names: readonly N[], runs: number, once: (name: N) => Timing): Record<N, Timings> {
  for (const name of names) once(name);
  const timings = Object.fromEntries(names.map((name) => [name, { walls: [], cpus: [] } as Timings])) as Record<N, Timings>;
  for (let round = 0; round < runs; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length]!;
      const { wall, cpu } = once(name);
      timings[name].walls.push(wall);
      if (cpu !== undefined) timings[name].cpus.push(cpu);
    }
  }
  return timings;
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
export const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
export const ms = (x: number): string => `${x.toFixed(0).padStart(6)} ms`;

/** One row per name: median wall and its ratio to the anchor's, mean CPU and its ratio, wall min..max. */
export function printTimingTable<N extends string>(names: readonly N[], timings: Record<N, Timings>, anchor: N, label: (name: N) => string): void {
  const anchorWall = median(timings[anchor].walls);
  const anchorCpu = timings[anchor].cpus.length ? mean(timings[anchor].cpus) : undefined;
  console.log('                                     wall (median)   ratio      CPU (mean)   ratio   wall min..max');
  for (const name of names) {
    const { walls, cpus } = timings[name];
    const wall = median(walls);
    const cpu = cpus.length ? mean(cpus) : undefined;
    const cpuText = cpu === undefined || anchorCpu === undefined ? '        n/a        ' : `${ms(cpu)}   ${(cpu / anchorCpu).toFixed(1).padStart(5)}x`;
    console.log(`  ${label(name).padEnd(32)} ${ms(wall)}    ${(wall / anchorWall).toFixed(1).padStart(5)}x   ${cpuText}   ${Math.min(...walls).toFixed(0)}..${Math.max(...walls).toFixed(0)} ms`);
  }
}
