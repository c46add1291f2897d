/**
 * Credential-shaped substrings are replaced before any text reaches a log line or a persisted
 * record that was not written by the model. The patterns favour false positives: a scrubbed
 * harmless token costs nothing, a leaked key costs a rotation.
 */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}/g, // OpenAI / Anthropic / Stripe style
  /\bxai-[A-Za-z0-9]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{30,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API key
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
  /(?<=\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi, // password in a URI
  /(?<=\b(?:authorization|x-api-key|api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?(?:Bearer\s+)?)[^\s"',;]{6,}/gi,
];

export const REDACTED = '[REDACTED]';

export function scrubSecrets(text: string): string {
  let out = text;
  for (const pattern of CREDENTIAL_PATTERNS) out = out.replace(pattern, REDACTED);
  return out;
}
