import { Session } from 'node:inspector/promises';

/**
 * In-process CPU profiling for benchmarks (the same V8 sampler `node --cpu-prof` uses), plus a
 * bottom-up summary: each sample is charged to the innermost frame that belongs to a named
 * area (a category), so time in zod, node:internal streams or native SQLite calls is charged to
 * the acx or SDK code that called it.
 */
export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
  hitCount?: number;
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export async function profile<T>(fn: () => Promise<T>, intervalUs = 100): Promise<{ result: T; profile: CpuProfile }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  try {
    const result = await fn();
    const { profile: cpu } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    return { result, profile: cpu };
  } finally {
    session.disconnect();
  }
}

/** Returns a category for a frame, or undefined to look further up the stack. */
export type Categorize = (frame: CpuProfileNode['callFrame']) => string | undefined;

export interface ProfileSummary {
  totalMs: number;
  /** Milliseconds per category, largest first. */
  categories: Array<{ name: string; ms: number }>;
  /** Self time per function (leaf frames), largest first. */
  hot: Array<{ name: string; ms: number }>;
}

export function summarize(cpu: CpuProfile, categorize: Categorize, top = 15): ProfileSummary {
  const byId = new Map(cpu.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of cpu.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const categoryOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = categoryOf.get(id);
    if (known) return known;
    const node = byId.get(id)!;
    const special = node.callFrame.functionName;
    let name: string | undefined;
    if (special === '(garbage collector)') name = 'GC';
    else if (special === '(idle)') name = 'idle (event loop waiting)';
    else if (special === '(program)' || special === '(root)') name = 'V8/native, not attributed';
    else name = categorize(node.callFrame);
    if (!name) {
      const up = parent.get(id);
      name = up === undefined ? 'other' : resolve(up);
    }
    categoryOf.set(id, name);
    return name;
  };
  const categories = new Map<string, number>();
  const hot = new Map<string, number>();
  let total = 0;
  cpu.samples.forEach((id, index) => {
    const ms = (cpu.timeDeltas[index] ?? 0) / 1000;
    total += ms;
    const category = resolve(id);
    categories.set(category, (categories.get(category) ?? 0) + ms);
    const frame = byId.get(id)!.callFrame;
    const file = frame.url ? frame.url.replace(/^.*\/(node_modules|src|bench|test)\//, '$1/') : '(native)';
    const key = `${frame.functionName || '(anonymous)'} ${file}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    hot.set(key, (hot.get(key) ?? 0) + ms);
  });
  const sorted = (map: Map<string, number>) =>
    [...map].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
  return { totalMs: total, categories: sorted(categories), hot: sorted(hot).slice(0, top) };
}
