/**
 * Credentials are replaced before any text reaches a log line, an error a user reads, or a
 * persisted record that was not written by the model. Two nets: the live values the process
 * holds (a key without a vendor prefix, like a local server's ACX_API_KEY, has no shape to
 * match), then credential shapes. Both favour false positives: a scrubbed harmless token costs
 * nothing, a leaked key costs a rotation.
 */
export const REDACTED = '[REDACTED]';

const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}/g, // OpenAI / Anthropic / Stripe style
  /\bxai-[A-Za-z0-9]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{30,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API key
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
  /(?<=\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi, // password in a URI
  // The value of a name that says it is a credential (`Authorization: Bearer …`, `api_key=…`,
  // `aws_secret_access_key = …`, `"token": "…"`); plain numbers (max_tokens: 1000) are not.
  /(?<=\b[\w-]*(?:authorization|api[_-]?key|access[_-]?key|token|secret|password|passwd)[\w-]*["']?\s*[:=]\s*["']?(?:Bearer\s+)?)(?!Bearer\b|[\d.]+\b)[^\s"',;]{6,}/gi,
];

const AWS_KEY_ID = /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g;
/** A 40-character AWS secret access key: base64 letters, bounded on both sides. */
const AWS_SECRET = /(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g;
/** How close (in characters) a 40-character secret must be to an access key id to be taken for its secret. */
const AWS_PAIR_DISTANCE = 200;

/** Shorter values are not scrubbed as live secrets: "test" or "1" would blank out ordinary text. */
export const MIN_LIVE_SECRET_CHARS = 8;

/**
 * Environment variables whose values are credentials: every variable a model provider or an ACP
 * profile reads a key or token from matches (test/util/scrub.test.ts holds both lists to this).
 * A name that points at a credential elsewhere (`…_FILE`, `…_PATH`, `…_URL`) is not one.
 */
const CREDENTIAL_VARIABLE = /(?:^|_)(?:API_?KEY|ACCESS_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)/i;
const REFERENCE_VARIABLE = /_(?:FILE|PATH|DIR|URL|HOST|PORT)$/i;

export function isCredentialVariable(name: string): boolean {
  return CREDENTIAL_VARIABLE.test(name) && !REFERENCE_VARIABLE.test(name);
}

const liveSecrets = new Set<string>();
let liveSorted: string[] = [];
let environmentRead = false;

/**
 * Adds a credential value this process holds to the ones scrubbed from every text, e.g. a key a
 * provider read from a variable set after start-up, or a token made up at run time. Values
 * shorter than MIN_LIVE_SECRET_CHARS are ignored.
 */
export function addLiveSecret(value: string | undefined): void {
  const trimmed = value?.trim();
  if (!trimmed || trimmed.length < MIN_LIVE_SECRET_CHARS || liveSecrets.has(trimmed)) return;
  liveSecrets.add(trimmed);
  // Longest first: a value that contains another is replaced whole.
  liveSorted = [...liveSecrets].sort((a, b) => b.length - a.length);
}

/**
 * The live values: the credential variables of the environment, read once on first use (reading
 * the whole environment on every log line would cost more than the line), plus every value
 * added since.
 */
function liveValues(): readonly string[] {
  if (!environmentRead) {
    environmentRead = true;
    for (const [name, value] of Object.entries(process.env)) if (isCredentialVariable(name)) addLiveSecret(value);
  }
  return liveSorted;
}

export function scrubSecrets(text: string): string {
  let out = text;
  for (const value of liveValues()) if (out.includes(value)) out = out.split(value).join(REDACTED);
  out = scrubAwsSecrets(out);
  for (const pattern of CREDENTIAL_PATTERNS) out = out.replace(pattern, REDACTED);
  return out.replace(AWS_KEY_ID, REDACTED);
}

/** An AWS secret access key has no prefix of its own: it is the 40-character token beside an access key id. */
function scrubAwsSecrets(text: string): string {
  const ids = [...text.matchAll(AWS_KEY_ID)].map((match) => match.index);
  if (ids.length === 0) return text;
  return text.replace(AWS_SECRET, (secret, offset: number) =>
    ids.some((id) => Math.abs(id - offset) <= AWS_PAIR_DISTANCE) ? REDACTED : secret,
  );
}
