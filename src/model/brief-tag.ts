/**
 * Marks the volatile per-step brief (clock, step counter, memory context) in a request.
 * The brief is spliced in last and never persisted; cassettes mask it when comparing requests.
 */
export const BRIEF_TAG = '<acx-brief>';
