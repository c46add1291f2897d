// The run's verdict and its report: counts a person reads at a glance, event→reply latency
// percentiles with and without a fault in the way, and an SVG timeline of traffic, latency and
// faults. The verdict fails on any lost, duplicated or stuck item and on any integrity problem.
import { DEFAULT_CLAIM_LEASE_TTL_MS } from '../src/store/postgres-channel-state.ts';
import type { Asked, PlatformView, QueueState } from './checker.ts';
import type { FaultRecord } from './faults.ts';
import type { Crash } from './processes.ts';
import type { Post } from './traffic.ts';

/**
 * The lease the latency goal allows for: a timeline's claims' (PostgreSQL's default TTL), which a
 * killed or failed wake's messages wait out before another wake takes them over. It is the longer
 * of the fleet's two (a worker's pg-boss job heartbeat is 10 s), so the one a recovery is bound by.
 */
export const LEASE_MS = DEFAULT_CLAIM_LEASE_TTL_MS;

export interface RunFacts {
  command: string;
  startedAt: number;
  trafficEndedAt: number;
  finishedAt: number;
  posts: Post[];
  platform: PlatformView;
  queue: QueueState;
  faults: FaultRecord[];
  faultErrors: string[];
  /** Fault kinds asked for (`--faults all`) that this machine cannot inject, each with why. */
  leftOut: string[];
  /** Fleet processes that exited on their own (then restarted by the run). */
  crashes: Crash[];
  integrity: { checked: number; problems: string[] };
  /** Effect-file lines that name no message the platform has. */
  unknownEffects: number;
}

export interface Check {
  title: string;
  passed: boolean;
}

export interface Summary {
  ok: boolean;
  checks: Check[];
  text: string;
  svg: string;
}

function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const seconds = (ms: number | undefined): string => (ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`);

/** A message was answered under a fault when a fault's span (until its target was back) overlaps its wait. */
function underFault(asked: Asked, faults: readonly FaultRecord[]): boolean {
  return faultsDuring(asked, faults).length > 0;
}

/** The faults in effect at some moment between a message and its first reply. */
function faultsDuring(asked: Asked, faults: readonly FaultRecord[]): FaultRecord[] {
  const replied = asked.replies[0]!;
  return faults.filter((fault) => fault.at <= replied && fault.recoveredAt >= asked.at);
}

export function summarize(facts: RunFacts): Summary {
  const { asked } = facts.platform;
  const answered = asked.filter((a) => a.replies.length > 0);
  const duplicateReplies = asked.filter((a) => a.replies.length > 1);
  const unanswered = asked.filter((a) => a.replies.length === 0);
  const deadLettered = unanswered.filter((a) => facts.queue.deadLetteredMessages.has(a.uuid));
  const lost = unanswered.filter((a) => !facts.queue.deadLetteredMessages.has(a.uuid));
  const effectful = asked.filter((a) => a.agent === 'lex');
  const duplicateEffects = effectful.filter((a) => a.effects > 1);
  // A reply claiming an effect the effect file does not hold: the harness told the model a failed call succeeded.
  const claimedWithoutEffect = effectful.filter((a) => a.replies.length > a.failureReplies && a.effects === 0);
  const toldFailed = effectful.filter((a) => a.failureReplies > 0);
  // The server died after appending, before answering: at most once, and the reply errs on the side of "not done".
  const toldFailedButDone = toldFailed.filter((a) => a.effects > 0);
  const stuck = (facts.queue.states.created ?? 0) + (facts.queue.states.retry ?? 0) + (facts.queue.states.active ?? 0);
  const pendingDeliveries = facts.queue.deliveries.pending ?? 0;
  const latencies = (list: Asked[]) => list.map((a) => a.replies[0]! - a.at).sort((x, y) => x - y);
  const clean = latencies(answered.filter((a) => !underFault(a, facts.faults)));
  const faulted = latencies(answered.filter((a) => underFault(a, facts.faults)));
  const all = latencies(answered);
  const p99Clean = percentile(clean, 99);
  const p99Faulted = percentile(faulted, 99);
  const latencyGoal = p99Clean === undefined || p99Faulted === undefined ? undefined : p99Faulted <= 2 * p99Clean + LEASE_MS;

  // Each check the verdict rests on, named as a person would say it.
  const checks: Check[] = [
    { title: 'the humans posted and the platform stored messages', passed: asked.length > 0 },
    { title: 'no message lost', passed: lost.length === 0 },
    { title: 'no reply posted twice', passed: duplicateReplies.length === 0 },
    { title: 'no side effect performed twice', passed: duplicateEffects.length === 0 },
    { title: 'no reply claims an effect that was not performed', passed: claimedWithoutEffect.length === 0 },
    { title: 'no queue job left claimed or waiting', passed: stuck === 0 },
    { title: 'no platform delivery left pending', passed: pendingDeliveries === 0 },
    { title: 'every database passes its integrity check', passed: facts.integrity.problems.length === 0 },
    { title: 'every fault was injected', passed: facts.faultErrors.length === 0 },
    { title: 'no fleet process died on its own', passed: facts.crashes.length === 0 },
  ];
  const ok = checks.every((check) => check.passed);

  const byKind = new Map<string, number>();
  for (const fault of facts.faults) byKind.set(fault.kind, (byKind.get(fault.kind) ?? 0) + 1);
  const count = (outcome: Post['outcome']) => facts.posts.filter((p) => p.outcome === outcome).length;
  const minutes = (facts.trafficEndedAt - facts.startedAt) / 60_000;
  const examples = (list: Asked[]) => (list.length === 0 ? '' : `  (e.g. ${list.slice(0, 5).map((a) => a.tag).join(' ')})`);
  const row = (name: string, list: number[]) => `| ${name} | ${list.length} | ${seconds(percentile(list, 50))} | ${seconds(percentile(list, 95))} | ${seconds(percentile(list, 99))} | ${seconds(list.at(-1))} |`;
  const text = [
    `# acx chaos run: ${ok ? 'PASS' : 'FAIL'}`,
    '',
    `\`${facts.command}\``,
    `traffic ${minutes.toFixed(1)} min, then drained in ${((facts.finishedAt - facts.trafficEndedAt) / 1000).toFixed(0)} s`,
    '',
    '## Counts',
    '',
    `| what | count |`,
    `| --- | --- |`,
    `| messages sent by humans | ${facts.posts.length} (stored ${asked.length}; refused while the platform was down ${count('refused')}; outcome unknown ${count('unknown')}) |`,
    `| answered exactly once | ${answered.length - duplicateReplies.length} |`,
    `| **lost** (no reply, no dead letter) | **${lost.length}**${examples(lost)} |`,
    `| **duplicate replies** | **${duplicateReplies.length}**${examples(duplicateReplies)} |`,
    `| **duplicate effects** | **${duplicateEffects.length}** of ${effectful.length} effectful messages${examples(duplicateEffects)} |`,
    `| **replies claiming an effect not performed** | **${claimedWithoutEffect.length}**${examples(claimedWithoutEffect)} |`,
    `| replies saying the effect failed (its call reported failed; unsafe, not retried) | ${toldFailed.length}${examples(toldFailed)}; of them performed before the server died ${toldFailedButDone.length} |`,
    `| effects naming no stored message | ${facts.unknownEffects} |`,
    `| dead-lettered (operator-visible) | ${deadLettered.length} messages; ${facts.queue.deadLettered} dead-letter jobs |`,
    `| **stuck** queue jobs (created/retry/active) | **${stuck}** |`,
    `| queue jobs by state | ${JSON.stringify(facts.queue.states)} |`,
    `| platform deliveries by state | ${JSON.stringify(facts.queue.deliveries)} |`,
    `| **processes that died on their own** (restarted after 1 s) | **${facts.crashes.length}**${facts.crashes.length === 0 ? '' : `: ${facts.crashes.map((c) => `${c.service} (${c.signal ?? `exit ${c.status}`}, at ${((c.at - facts.startedAt) / 1000).toFixed(0)} s)`).join(', ')}`} |`,
    `| agent messages quoting no asked tag | ${facts.platform.strayReplies.length} |`,
    `| databases checked (SQLite integrity_check, pg_amcheck) | ${facts.integrity.checked}; problems: ${facts.integrity.problems.length === 0 ? 'none' : facts.integrity.problems.join(' / ')} |`,
    '',
    '## Faults',
    '',
    `${facts.faults.length} injected: ${[...byKind].map(([kind, n]) => `${kind} ${n}`).join(', ') || 'none'}`,
    ...facts.faultErrors.map((error) => `- could not inject: ${error}`),
    ...facts.leftOut.map((note) => `- left out: ${note}`),
    '',
    '## Event → reply latency (first reply)',
    '',
    '| messages | n | p50 | p95 | p99 | max |',
    '| --- | --- | --- | --- | --- | --- |',
    row('all', all),
    row('no fault during the wait', clean),
    row('a fault during the wait', faulted),
    // Where the wait under faults comes from: the messages each kind of fault overlapped (a message may count under several).
    ...[...new Set(facts.faults.map((fault) => fault.kind))].sort().map((kind) =>
      row(`… ${kind} during the wait`, latencies(answered.filter((a) => faultsDuring(a, facts.faults).some((fault) => fault.kind === kind)))),
    ),
    '',
    latencyGoal === undefined
      ? 'Latency goal (p99 under faults ≤ 2 × fault-free p99 + one lease): not measurable (one side is empty).'
      : `Latency goal (p99 under faults ≤ 2 × fault-free p99 + one ${LEASE_MS / 1000} s lease = ${seconds(2 * p99Clean! + LEASE_MS)}): ${latencyGoal ? 'met' : 'MISSED'}.`,
    '',
  ].join('\n');
  return { ok, checks, text, svg: timelineSvg(facts) };
}

const FAULT_COLOURS: Record<string, string> = { model: '#e8a33d', mcp: '#9b6bd3', postgres: '#3d7be8', router: '#d9534f', platform: '#8c564b' };

function timelineSvg(facts: RunFacts): string {
  const width = 1200;
  const left = 110;
  const plot = width - left - 20;
  const start = facts.startedAt;
  const span = Math.max(1, facts.finishedAt - start);
  const x = (t: number) => left + ((t - start) / span) * plot;
  const targets = [...new Set(facts.faults.map((f) => f.target))].sort();
  const trafficTop = 30;
  const trafficHeight = 80;
  const latencyTop = trafficTop + trafficHeight + 30;
  const latencyHeight = 160;
  const faultTop = latencyTop + latencyHeight + 30;
  const height = faultTop + targets.length * 22 + 30;
  const parts: string[] = [];
  // Traffic: messages stored per 5-second bucket.
  const bucketMs = 5000;
  const buckets = new Map<number, number>();
  for (const a of facts.platform.asked) buckets.set(Math.floor((a.at - start) / bucketMs), (buckets.get(Math.floor((a.at - start) / bucketMs)) ?? 0) + 1);
  const most = Math.max(1, ...buckets.values());
  for (const [bucket, n] of buckets) {
    const h = (n / most) * trafficHeight;
    parts.push(`<rect x="${x(start + bucket * bucketMs).toFixed(1)}" y="${(trafficTop + trafficHeight - h).toFixed(1)}" width="${Math.max(1, (bucketMs / span) * plot - 1).toFixed(1)}" height="${h.toFixed(1)}" fill="#6c9"/>`);
  }
  parts.push(`<text x="4" y="${trafficTop + 14}">messages/5 s</text><text x="4" y="${trafficTop + 30}" fill="#666">max ${most}</text>`);
  // Latency: one dot per answered message at its post time, log scale from 0.1 s to the slowest.
  const answered = facts.platform.asked.filter((a) => a.replies.length > 0);
  const slowest = Math.max(1000, ...answered.map((a) => a.replies[0]! - a.at));
  const y = (ms: number) => latencyTop + latencyHeight - (Math.log10(Math.max(100, ms) / 100) / Math.log10(slowest / 100)) * latencyHeight;
  for (const a of answered) {
    const colour = a.replies.length > 1 ? '#d00' : '#357';
    parts.push(`<circle cx="${x(a.at).toFixed(1)}" cy="${y(a.replies[0]! - a.at).toFixed(1)}" r="1.5" fill="${colour}" fill-opacity="0.5"/>`);
  }
  for (const a of facts.platform.asked.filter((q) => q.replies.length === 0)) parts.push(`<text x="${x(a.at).toFixed(1)}" y="${latencyTop + 10}" fill="#d00" font-size="12">✕</text>`);
  parts.push(`<text x="4" y="${latencyTop + 14}">event→reply</text><text x="4" y="${latencyTop + 30}" fill="#666">log, 0.1–${(slowest / 1000).toFixed(0)} s</text>`);
  for (const ms of [100, 1000, 10_000, 100_000].filter((v) => v <= slowest)) {
    parts.push(`<line x1="${left}" x2="${width - 20}" y1="${y(ms).toFixed(1)}" y2="${y(ms).toFixed(1)}" stroke="#ddd"/><text x="${left - 4}" y="${y(ms).toFixed(1)}" text-anchor="end" font-size="10" fill="#666">${ms / 1000} s</text>`);
  }
  // Faults: one row per target, a bar from injection to recovery.
  targets.forEach((target, i) => {
    const rowY = faultTop + i * 22;
    parts.push(`<text x="4" y="${rowY + 13}">${target}</text>`);
    for (const fault of facts.faults.filter((f) => f.target === target)) {
      const colour = FAULT_COLOURS[target] ?? '#555';
      parts.push(`<rect x="${x(fault.at).toFixed(1)}" y="${rowY}" width="${Math.max(2, x(fault.recoveredAt) - x(fault.at)).toFixed(1)}" height="16" fill="${colour}"><title>${fault.kind}: ${fault.detail}</title></rect>`);
    }
  });
  for (const crash of facts.crashes) parts.push(`<text x="${x(crash.at).toFixed(1)}" y="${faultTop - 8}" fill="#d00" font-size="11" text-anchor="middle">☠<title>${crash.service} died on its own</title></text>`);
  parts.push(`<line x1="${x(facts.trafficEndedAt).toFixed(1)}" x2="${x(facts.trafficEndedAt).toFixed(1)}" y1="20" y2="${height - 20}" stroke="#000" stroke-dasharray="4 3"/><text x="${x(facts.trafficEndedAt) + 4}" y="16" font-size="11">traffic ends, drain</text>`);
  const axis = Array.from({ length: 11 }, (_, i) => start + (span * i) / 10).map((t) => `<text x="${x(t).toFixed(1)}" y="${height - 6}" font-size="10" text-anchor="middle" fill="#666">${((t - start) / 1000).toFixed(0)} s</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="#fff"/>${parts.join('')}${axis.join('')}</svg>\n`;
}

/** The checks in the shape of vitest's JSON report (one file, one assertion per check), for .ci/run's summary. */
export function checksAsTestReport(checks: readonly Check[], name: string): string {
  const assertionResults = checks.map((check) => ({ title: check.title, fullName: `chaos ${check.title}`, status: check.passed ? 'passed' : 'failed' }));
  const failed = checks.filter((check) => !check.passed).length;
  return `${JSON.stringify({ success: failed === 0, numFailedTests: failed, numPassedTests: checks.length - failed, testResults: [{ name, status: failed === 0 ? 'passed' : 'failed', message: '', assertionResults }] }, null, 2)}\n`;
}
