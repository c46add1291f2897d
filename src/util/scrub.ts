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

/**
 * A token of `core` standing alone: not inside a longer run of `alphabet` (a character class
 * body), though right after an escape (`\n`, `\t`, `\r` in JSON or source text) is a start:
 * the escape's letter would otherwise join the token. `after` may forbid more after it.
 */
function token(core: string, alphabet: string, after = alphabet): RegExp {
  return new RegExp(String.raw`(?:(?<=\\[nrt])|(?<![${alphabet}]))${core}(?![${after}])`, 'g');
}
const ALNUM = 'A-Za-z0-9';
const BASE64 = 'A-Za-z0-9/+';
/** Base64 and the `=` padding that would follow a longer token. */
const BASE64_END = 'A-Za-z0-9/+=';

/**
 * Cloud access keys come in halves: a key id with a vendor prefix, and a secret with no shape of
 * its own but its length and alphabet. The id is scrubbed wherever it is; the secret is taken to
 * be a token of its vendor's shape near an anchor: an id, a name that says it is one
 * (`aws_secret_access_key SECRET`, `"SecretAccessKey": …`), or a `[REDACTED]` where an id or a
 * secret was already removed (by the live values, or by whatever scrubbed the text before).
 */
const KEY_PAIRS: ReadonlyArray<{ id: RegExp; secret: RegExp }> = [
  // AWS: long-term (AKIA), temporary (ASIA) and service-specific ids; a 40-character base64 secret.
  { id: token('(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}', ALNUM), secret: token('[A-Za-z0-9/+]{40}', BASE64, BASE64_END) },
  // Google Cloud Storage HMAC keys: a GOOG… access id, a 40-character base64 secret.
  { id: token('GOOG[0-9A-Z]{20,57}', ALNUM), secret: token('[A-Za-z0-9/+]{40}', BASE64, BASE64_END) },
  // Alibaba Cloud: an LTAI… AccessKey id, a 30-character secret.
  { id: token('LTAI[0-9A-Za-z]{12,20}', ALNUM), secret: token('[A-Za-z0-9]{30}', ALNUM) },
  // Tencent Cloud: an AKID… SecretId, a 32-character SecretKey.
  { id: token('AKID[0-9A-Za-z]{32}', ALNUM), secret: token('[A-Za-z0-9]{32}', ALNUM) },
];
/** Names that announce the secret half of a key pair, in the spellings CLIs, env files and SDK JSON use. */
const SECRET_NAME = /(?:secret[_-]?access[_-]?key|access[_-]?key[_-]?secret|secret[_-]?key)/gi;
/** How close (in characters) a secret-shaped token must be to an anchor to be taken for a secret. */
const PAIR_DISTANCE = 200;

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

/**
 * Every match of CREDENTIAL_PATTERNS holds one of these, and every text KEY_PAIRS scrubs holds an
 * anchor (an id's prefix, a secret's name, a [REDACTED]): a text with none skips those passes,
 * as most log values (ids, counts, names) do. Keep each in step with its list.
 */
const CREDENTIAL_HINT = /PRIVATE KEY|[spr]k-|xai-|gh[pousr]_|github_pat_|AIza|xox[abprs]-|eyJ|:\/\/|authorization|api[_-]?key|access[_-]?key|token|secret|passw/i;
const KEY_PAIR_HINT = /AKIA|ASIA|ABIA|ACCA|GOOG|LTAI|AKID|secret|\[REDACTED\]/i;

export function scrubSecrets(text: string): string {
  // Shorter than anything scrubbed (a live secret, a password in `a://b:c@`).
  if (text.length < MIN_LIVE_SECRET_CHARS) return text;
  let out = text;
  for (const value of liveValues()) if (out.includes(value)) out = out.split(value).join(REDACTED);
  if (KEY_PAIR_HINT.test(out)) out = scrubKeyPairs(out);
  if (CREDENTIAL_HINT.test(out)) for (const pattern of CREDENTIAL_PATTERNS) out = out.replace(pattern, REDACTED);
  return out;
}

/** Every string in a JSON-like value (keys too) scrubbed, before it is serialised: JSON's escapes would hide a token's edges. */
export function scrubDeep(value: unknown): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (Array.isArray(value)) return value.map(scrubDeep);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [scrubSecrets(key), scrubDeep(entry)]));
  }
  return value;
}

/** The ids of KEY_PAIRS and the secrets near an anchor (see there). */
function scrubKeyPairs(text: string): string {
  let out = text;
  // The anchors every pair shares, read again only once a pair has changed the text.
  let named: number[] | undefined;
  let namedIn = '';
  for (const { id, secret } of KEY_PAIRS) {
    if (named === undefined || namedIn !== out) {
      named = [...out.matchAll(SECRET_NAME), ...out.matchAll(REDACTED_MARKER)].map((match) => match.index);
      namedIn = out;
    }
    const anchors = [...[...out.matchAll(id)].map((match) => match.index), ...named];
    if (anchors.length === 0) continue;
    out = out.replace(secret, (token, offset: number) =>
      looksRandom(token) && anchors.some((anchor) => Math.abs(anchor - offset) <= PAIR_DISTANCE) ? REDACTED : token,
    );
    out = out.replace(id, REDACTED);
  }
  return out;
}

const REDACTED_MARKER = /\[REDACTED\]/g;

/**
 * A generated secret mixes upper and lower case (a random 40-character one lacks either with a
 * chance below 1 in 10^9); a hash in hex (a git commit), a word or a path in one case does not.
 */
function looksRandom(token: string): boolean {
  return /[A-Z]/.test(token) && /[a-z]/.test(token);
}
