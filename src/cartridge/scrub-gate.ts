import { AcxError, errorMarker, setMarker } from '../core/errors.ts';

/** One blocking match. `byteOffset` is the offset of the match in the scanned file's bytes. */
export interface ScrubFinding {
  file: string;
  byteOffset: number;
  ruleId: string;
}

export interface ScanItem {
  /** What a user can open: a path relative to the agent directory, or a cartridge source ref. */
  file: string;
  bytes: Uint8Array;
}

// Patterns run over a latin1 view of the bytes so that a match index IS the byte offset.
const RULES: ReadonlyArray<{ id: string; re: RegExp }> = [
  { id: 'private-key', re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/gi },
  { id: 'aws-access-key', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { id: 'github-token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{30,})/g },
  { id: 'slack-token', re: /\bxox[baprs]-[A-Za-z0-9-]{10,}/g },
  { id: 'google-api-key', re: /\bAIza[0-9A-Za-z_-]{35}/g },
  { id: 'openai-anthropic-key', re: /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g },
  { id: 'xai-key', re: /\bxai-[A-Za-z0-9]{20,}/g },
  { id: 'stripe-key', re: /\b[rs]k_live_[A-Za-z0-9]{16,}/g },
  { id: 'jwt', re: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { id: 'uri-credentials', re: /[a-z][a-z0-9+.-]*:\/\/[^/\s:@'"]+:[^/\s@'"]+@/gi },
  {
    id: 'secret-assignment',
    // .env style NAME=value where NAME says secret/token/password/api key; numbers and
    // obvious placeholders (<...>, ${...}) are not secrets.
    re: /\b[A-Za-z0-9_-]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY)[A-Za-z0-9_-]*[ \t]*[=:][ \t]*['"]?(?![0-9.]+\b)(?![<$%{])[^\s'"]{8,}/gi,
  },
  { id: 'home-path', re: /(?:\/(?:Users|home)\/[A-Za-z0-9._-]+|\b[A-Za-z]:\\Users\\[A-Za-z0-9._-]+|(?:^|[\s"'`(=])~\/[A-Za-z0-9._-])/g },
];

const TOKEN = /[^\s"'`,;:()[\]{}<>=|]{20,}/g;

function entropyBitsPerChar(s: string): number {
  const freq = new Map<string, number>();
  for (const ch of s) freq.set(ch, (freq.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of freq.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** A random-looking token: ≥ 20 chars, ≥ 4.0 bits/char, mixed letters and digits (SPEC §7.5). */
function isHighEntropy(token: string): boolean {
  if (token.startsWith('sha256:') || token.startsWith('sha1:') || token.startsWith('cbf1_')) return false; // content addresses
  if (/^(?:https?|file):\/\//i.test(token)) return false; // URLs are checked by uri-credentials
  if (!/^[A-Za-z0-9+/_=.-]+$/.test(token)) return false;
  if (!/[0-9]/.test(token) || !/[A-Za-z]/.test(token)) return false;
  return entropyBitsPerChar(token) >= 4.0;
}

/** Scans items; returns every blocking finding (empty = clean). */
export function scanForSecrets(items: readonly ScanItem[]): ScrubFinding[] {
  const findings: ScrubFinding[] = [];
  for (const item of items) {
    const text = Buffer.from(item.bytes).toString('latin1');
    for (const rule of RULES) {
      rule.re.lastIndex = 0;
      for (const m of text.matchAll(rule.re)) {
        // home-path matches may start with the separator character that introduced them
        const lead = rule.id === 'home-path' && /^[\s"'`(=]/.test(m[0]) ? 1 : 0;
        findings.push({ file: item.file, byteOffset: (m.index ?? 0) + lead, ruleId: rule.id });
      }
    }
    for (const m of text.matchAll(TOKEN)) {
      const token = m[0];
      // Paths (slashes plus '.' or '-') are judged segment by segment; a base64 secret has neither.
      const pathLike = token.includes('/') && /[.-]/.test(token);
      let offset = 0;
      for (const part of pathLike ? token.split('/') : [token]) {
        if (part.length >= 20 && isHighEntropy(part)) {
          findings.push({ file: item.file, byteOffset: (m.index ?? 0) + offset, ruleId: 'high-entropy' });
          break;
        }
        offset += part.length + 1;
      }
    }
  }
  findings.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.byteOffset - b.byteOffset));
  return findings;
}

const SCRUB_BLOCKED_MARKER = errorMarker('ScrubBlockedError');

export class ScrubBlockedError extends AcxError {
  readonly findings: ScrubFinding[];
  constructor(findings: ScrubFinding[]) {
    const shown = findings.slice(0, 10).map((f) => `${f.file}@${f.byteOffset} (${f.ruleId})`).join(', ');
    super('scrub-blocked', `scrub gate blocked the build: ${findings.length} finding(s): ${shown}${findings.length > 10 ? ', …' : ''}`, {
      hint: 'remove the secret, token or home path from those files (nothing is redacted automatically), then build again',
      details: { findings },
    });
    setMarker(this, SCRUB_BLOCKED_MARKER);
    this.name = 'ScrubBlockedError';
    this.findings = findings;
  }

  static override isInstance(error: unknown): error is ScrubBlockedError {
    return AcxError.hasMarker(error, SCRUB_BLOCKED_MARKER);
  }
}

/** Fail-closed gate: throws ScrubBlockedError with {file, byteOffset, ruleId} findings. */
export function scrubGate(items: readonly ScanItem[]): void {
  const findings = scanForSecrets(items);
  if (findings.length) throw new ScrubBlockedError(findings);
}
