// Secret scrubbing: the live credential values the process holds, then credential shapes. The
// environment is read once, on the first scrub, so this file sets its key before any scrub runs.
import { describe, expect, it } from 'vitest';
import { buildLaunchEnv } from '../../src/harness/acp/launch-env.ts';
import { ACP_PROFILES } from '../../src/harness/acp/profiles/by-name.ts';
import type { ACPSettings } from '../../src/harness/acp/settings.ts';
import { PROVIDERS, resolveModel } from '../../src/model/providers.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { addLiveSecret, isCredentialVariable, MIN_LIVE_SECRET_CHARS, REDACTED, scrubSecrets } from '../../src/util/scrub.ts';

// A key for a local OpenAI-compatible server: no vendor prefix, nothing a pattern could match.
const PLAIN_KEY = 'Zq81mLkP04vwRtY6';
process.env.ACX_API_KEY = PLAIN_KEY;
// Not a credential variable: its value is ordinary text that must survive.
process.env.ACX_A5_SCRUB_PLAIN = 'ordinary-words-here';

describe('live credential values', () => {
  it('every variable a model provider or an ACP profile reads a credential from counts as a credential', () => {
    const read = new Set<string>([
      ...Object.values(PROVIDERS).flatMap((provider) => provider.keyEnv),
      ...Object.values(ACP_PROFILES).flatMap((profile) => profile.credentialEnv ?? []),
      // acp/auth.ts: the AI Gateway credentials every Gateway-capable profile accepts.
      'AI_GATEWAY_API_KEY',
      'VERCEL_OIDC_TOKEN',
      // The host-tool MCP server's bearer token.
      'ACX_MCP_TOKEN',
    ]);
    expect([...read].filter((name) => !isCredentialVariable(name))).toEqual([]);
    expect(read.size).toBeGreaterThan(10);
  });

  it('variables that only point at a credential, or hold none, are not taken for one', () => {
    for (const name of ['ACX_BASE_URL', 'OPENAI_BASE_URL', 'ACX_SIGNING_KEY', 'ACX_KEY_DIR', 'ACX_MAX_CONTEXT_TOKENS', 'TOKENIZERS_PARALLELISM', 'GITHUB_TOKEN_FILE', 'PATH']) {
      expect(isCredentialVariable(name), name).toBe(false);
    }
  });

  it('a key without a vendor prefix, held in the environment, is scrubbed from any text', () => {
    const echoed = `401 Unauthorized: Incorrect API key provided: ${PLAIN_KEY}. You can find your key at https://example.test/keys (key ${PLAIN_KEY})`;
    expect(scrubSecrets(echoed)).toBe(`401 Unauthorized: Incorrect API key provided: ${REDACTED}. You can find your key at https://example.test/keys (key ${REDACTED})`);
    expect(scrubSecrets('ordinary-words-here')).toBe('ordinary-words-here');
  });

  it('a key a provider or an ACP profile reads from an environment other than the process\'s is scrubbed once read', async () => {
    scrubSecrets('the environment is read now, before these keys exist anywhere');
    const providerKey = 'LateProviderKey-8dPq2';
    const agentKey = 'LateAgentKey-4mWz7';
    expect(scrubSecrets(`${providerKey} ${agentKey}`)).toBe(`${providerKey} ${agentKey}`);
    await resolveModel({ spec: 'openai-compatible:m', env: { ACX_API_KEY: providerKey, ACX_BASE_URL: 'http://127.0.0.1:9/v1' } });
    await buildLaunchEnv({ harnessId: 'probe', credentialEnv: ['PROBE_API_KEY'] } as unknown as ACPSettings, {
      hostEnv: { PROBE_API_KEY: agentKey },
      bootstrapEnv: {},
      sandboxEnv: {},
      supportsRequestTransformations: false,
      clientApp: { name: 'acx-test', version: '0' },
      logger: silentLogger,
    });
    expect(scrubSecrets(`${providerKey} ${agentKey}`)).toBe(`${REDACTED} ${REDACTED}`);
  });

  it('a value added at run time is scrubbed, the longer of two overlapping values whole; short values never', () => {
    addLiveSecret('run-time-token-4471');
    addLiveSecret('run-time-token-4471-extended');
    expect(scrubSecrets('a run-time-token-4471-extended and a run-time-token-4471')).toBe(`a ${REDACTED} and a ${REDACTED}`);
    addLiveSecret('x'.repeat(MIN_LIVE_SECRET_CHARS - 1));
    addLiveSecret('test');
    expect(scrubSecrets('a test of xxxxxxx')).toBe('a test of xxxxxxx');
  });
});

describe('credential shapes', () => {
  const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';

  it('an AWS secret access key in a credentials file, an env line and STS JSON', () => {
    const file = `[default]\naws_access_key_id = ${KEY_ID}\naws_secret_access_key = ${SECRET}\n`;
    expect(scrubSecrets(file)).toBe(`[default]\naws_access_key_id = ${REDACTED}\naws_secret_access_key = ${REDACTED}\n`);
    expect(scrubSecrets(`export AWS_SECRET_ACCESS_KEY=${SECRET}`)).toBe(`export AWS_SECRET_ACCESS_KEY=${REDACTED}`);
    const sts = JSON.stringify({ Credentials: { AccessKeyId: 'ASIAIOSFODNN7EXAMPLE', SecretAccessKey: SECRET } });
    expect(scrubSecrets(sts)).toBe(JSON.stringify({ Credentials: { AccessKeyId: REDACTED, SecretAccessKey: REDACTED } }));
  });

  it('a 40-character secret beside an access key id, whatever separates them; not one far from any id', () => {
    expect(scrubSecrets(`${KEY_ID},${SECRET}`)).toBe(`${REDACTED},${REDACTED}`);
    expect(scrubSecrets(`use ${SECRET} with ${KEY_ID}`)).toBe(`use ${REDACTED} with ${REDACTED}`);
    const far = `commit ${SECRET.replace(/\//g, 'a')} is the fix`;
    expect(scrubSecrets(far)).toBe(far);
    expect(scrubSecrets(`${KEY_ID} ${'.'.repeat(300)} ${SECRET}`)).toBe(`${REDACTED} ${'.'.repeat(300)} ${SECRET}`);
  });

  it('a secret next to a key id that is already redacted (a live value, an earlier scrub) is scrubbed too', () => {
    const liveId = 'AKIA2EXAMPLELIVE0001';
    addLiveSecret(liveId);
    expect(scrubSecrets(`deploy keys ${liveId} ${SECRET}`)).toBe(`deploy keys ${REDACTED} ${REDACTED}`);
    expect(scrubSecrets(`deploy keys ${REDACTED} ${SECRET}`)).toBe(`deploy keys ${REDACTED} ${REDACTED}`);
  });

  it('a secret named without "=" or ":" (the aws CLI), and a pair split by a JSON escape', () => {
    expect(scrubSecrets(`aws configure set aws_secret_access_key ${SECRET}`)).toBe(`aws configure set aws_secret_access_key ${REDACTED}`);
    expect(scrubSecrets(`AWS_SECRET_ACCESS_KEY ${SECRET}`)).toBe(`AWS_SECRET_ACCESS_KEY ${REDACTED}`);
    // JSON text keeps a newline as the two characters \ and n: the n must not join either token.
    const json = JSON.stringify({ command: `export A=${KEY_ID}\n${SECRET}\tdone` });
    expect(json).toContain('\\n');
    expect(scrubSecrets(json)).toBe(JSON.stringify({ command: `export A=${REDACTED}\n${REDACTED}\tdone` }));
  });

  it('other clouds\' key id + secret pairs: Google Cloud Storage HMAC, Alibaba Cloud, Tencent Cloud', () => {
    expect(scrubSecrets(`GOOG1EXAMPLEEXAMPLEEXAMPLEEXAMPLE ${SECRET}`)).toBe(`${REDACTED} ${REDACTED}`);
    expect(scrubSecrets('AccessKeyId LTAI5tExampleExample12 AccessKeySecret Abcdefghijklmnopqrstuvwxyz0123')).toBe(
      `AccessKeyId ${REDACTED} AccessKeySecret ${REDACTED}`,
    );
    expect(scrubSecrets('SecretId AKIDExampleExampleExampleExample1234 SecretKey ExampleExampleExampleExample1234')).toBe(
      `SecretId ${REDACTED} SecretKey ${REDACTED}`,
    );
  });

  it('ordinary text beside a key id or a [REDACTED] is left alone: hashes, words, paths, longer or shorter tokens', () => {
    const sha = '3f786850e387550fdab836ed7e6dc881de23001b';
    expect(scrubSecrets(`${KEY_ID} was rotated in commit ${sha}`)).toBe(`${REDACTED} was rotated in commit ${sha}`);
    expect(scrubSecrets(`${KEY_ID} HEAD ${sha.toUpperCase()}`)).toBe(`${REDACTED} HEAD ${sha.toUpperCase()}`);
    const ordinary = [
      `${REDACTED} was rotated on 2024-01-01 by the platform team; see docs/security/rotation-policy-for-production.md`,
      `${REDACTED} sha256 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= 123e4567-e89b-12d3-a456-426614174000`,
      `${REDACTED} internationalizationandlocalizationsupport`,
      'The secret key rotation runs monthly; the access key secret is kept in the vault, never in chat.',
    ];
    for (const text of ordinary) expect(scrubSecrets(text)).toBe(text);
  });

  it('each vendor shape is scrubbed standing alone, with no other sign of a credential around it', () => {
    const alone: Array<[text: string, scrubbed: string]> = [
      ['-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----', REDACTED],
      ['sk-proj-Abcdefghijklmnop1234', REDACTED],
      ['rk-live-Abcdefghijklmnop1234', REDACTED],
      ['xai-Abcdefghijklmnopqrstu1', REDACTED],
      [`ghp_${'A1b2C3d4E5'.repeat(4)}`, REDACTED],
      [`github_pat_${'A1b2C3d4E5'.repeat(4)}`, REDACTED],
      [`AIza${'Sy0123456789abcdefABCDEF_-xyz012'}`, REDACTED],
      ['xoxb-1234567890-Abcdefghij', REDACTED],
      ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.Abcdefghijkl', REDACTED],
      ['postgres://app:hunter2pass@db.example.test/app', `postgres://app:${REDACTED}@db.example.test/app`],
      ['passwd: hunter2long', `passwd: ${REDACTED}`],
    ];
    for (const [text, scrubbed] of alone) expect(scrubSecrets(text), text).toBe(scrubbed);
    // Too short to hold any of them: left as it is, whatever it looks like.
    for (const short of ['sk-1', 'a://b:c', '7', '']) expect(scrubSecrets(short)).toBe(short);
  });

  it('a credential-named value is scrubbed; a number under such a name is not', () => {
    expect(scrubSecrets('OPENAI_API_KEY=abcdef123456 max_tokens: 100000')).toBe(`OPENAI_API_KEY=${REDACTED} max_tokens: 100000`);
    expect(scrubSecrets('Authorization: Bearer qwertyuiop123')).toBe(`Authorization: Bearer ${REDACTED}`);
  });
});
