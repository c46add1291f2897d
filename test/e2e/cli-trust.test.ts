// A user trusts their own key: `acx keygen --trust` → `acx build` → `acx verify` says local, read
// from the config home's registry with no flag; `acx trust add|revoke|list` edit that registry.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectCartridge } from '../../src/cartridge/inspect.ts';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { EXAMPLE_AGENT, runAcx, tempDir } from '../support/cartridge-fixtures.ts';
import { scaled } from '../support/time-scale.ts';

/** A fresh machine whose HOME and acx homes live in `home`. */
function acx(args: string[], home: string) {
  return runAcx(args, { HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') }, { fresh: true, cwd: home });
}

const KEYID = /ed25519:[0-9a-f]{64}/;

describe.concurrent('acx keygen --trust and acx trust (e2e)', { timeout: scaled(120_000) }, () => {
  it('keygen --trust, then build and verify: the user\'s own cartridge is local, with no --registry', async () => {
    const home = tempDir('acx-trust-');
    const keygen = await acx(['keygen', '-o', 'keys', '--trust', '--publisher', 'dev.acx.examples', '--json'], home);
    expect(keygen.code, keygen.stderr).toBe(0);
    const made = JSON.parse(keygen.stdout) as { keyid: string; privateKeyPath: string; publicKeyPath: string; trusted: { registry: string; change: string; own: boolean; entry: Record<string, unknown> } };
    expect(made.privateKeyPath).toBe(join(home, 'keys', 'acx-signing.key.pem'));
    expect(made.trusted).toMatchObject({ registry: join(home, 'config', 'trust-registry.json'), change: 'added', own: true, entry: { keyid: made.keyid, publisherId: 'dev.acx.examples', status: 'active', namespaceProof: { method: 'dns-txt', txtRecord: '_acx-challenge.examples.acx.dev' } } });
    // Public keys only, ever.
    expect(readFileSync(made.trusted.registry, 'utf8')).not.toMatch(/PRIVATE KEY/);

    const build = await acx(['build', EXAMPLE_AGENT, '-o', 'mine.acx', '--key', made.privateKeyPath], home);
    expect(build.code, build.stderr).toBe(0);
    const verify = await acx(['verify', 'mine.acx'], home);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^verdict:\s+local$/m);
    expect(verify.stdout).toContain(`registry:  ${made.trusted.registry}`);
    expect(verify.stdout).toContain("why:       signed by this installation's own key, active for dev.acx.examples");
    // inspect judges trust exactly as verify does: the config home's registry and own keys.
    const inspected = await acx(['inspect', 'mine.acx', '--json'], home);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(JSON.parse(inspected.stdout)).toMatchObject({ verification: { verdict: 'local', keyid: made.keyid } });
    const named = await acx(['inspect', 'mine.acx', '--registry', made.trusted.registry, '--config-home', join(home, 'elsewhere')], home);
    expect(named.stdout).toMatch(/^verdict:   trusted  key ed25519:/m);
    expect(inspectCartridge(join(home, 'mine.acx'), { registry: made.trusted.registry }).verification.verdict).toBe('trusted');

    // Revoked for a reason other than compromise: portable; for key-compromise: tampered (exit 4).
    const superseded = await acx(['trust', 'revoke', made.keyid, '--reason', 'superseded'], home);
    expect(superseded.code, superseded.stderr).toBe(0);
    expect(superseded.stdout).toContain(`revoked ${made.keyid} (superseded)`);
    expect((await acx(['verify', 'mine.acx'], home)).stdout).toMatch(/^verdict:\s+portable$/m);
    const compromised = await acx(['trust', 'revoke', made.keyid, '--reason', 'key-compromise', '--json'], home);
    expect(JSON.parse(compromised.stdout)).toMatchObject({ change: 'updated', entry: { status: 'revoked', revocationReason: 'key-compromise' } });
    const after = await acx(['verify', 'mine.acx'], home);
    expect(after.code).toBe(EXIT.tampered);
    expect(after.stdout).toMatch(/^verdict:\s+tampered$/m);
    expect(after.stdout).toContain('was revoked for key-compromise');
    // A revocation is final.
    const readd = await acx(['trust', 'add', made.publicKeyPath, '--publisher', 'dev.acx.examples'], home);
    expect(readd.code).toBe(EXIT.failure);
    expect(readd.stderr).toContain('a revocation is final');
  });

  it('trust add takes a public key file for a publisher and a validity window, trust list shows it, a keyid changes it', async () => {
    const home = tempDir('acx-trust-');
    expect((await acx(['keygen', '-o', 'keys'], home)).code).toBe(0);
    const empty = await acx(['trust', 'list'], home);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('No trust registry at');
    expect(existsSync(join(home, 'config', 'trust-registry.json')), 'listing creates nothing').toBe(false);

    const added = await acx(['trust', 'add', 'keys/acx-signing.pub.pem', '--publisher', 'com.example.team', '--not-before', '2026-01-01T00:00:00Z', '--not-after', '2031-01-01T00:00:00Z'], home);
    expect(added.code, added.stderr).toBe(0);
    const keyid = KEYID.exec(added.stdout)![0];
    expect(added.stdout).toContain(`added ${keyid} in ${join(home, 'config', 'trust-registry.json')}`);
    expect(added.stdout).toContain(`valid:     2026-01-01T00:00:00Z → 2031-01-01T00:00:00Z (cartridges signed before the start stay portable; to trust those too: acx trust add ${keyid} --not-before <their signing time>)`);
    expect(added.stdout).toContain('namespace: dns-txt _acx-challenge.team.example.com');
    expect(added.stdout).toContain('own key:   no');
    const listed = await acx(['trust', 'list'], home);
    expect(listed.stdout).toBe(`${join(home, 'config', 'trust-registry.json')}: 1 key\n${keyid}  com.example.team  active  2026-01-01T00:00:00Z → 2031-01-01T00:00:00Z\n`);

    const changed = await acx(['trust', 'add', keyid, '--not-after', '2032-01-01T00:00:00Z', '--own', '--json'], home);
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ change: 'updated', own: true, entry: { keyid, publisherId: 'com.example.team', notBefore: '2026-01-01T00:00:00Z', notAfter: '2032-01-01T00:00:00Z' } });
    const json = JSON.parse((await acx(['trust', 'list', '--json'], home)).stdout) as { exists: boolean; keys: Array<{ keyid: string; own: boolean }> };
    expect(json).toMatchObject({ exists: true, keys: [{ keyid, own: true }] });

    // GitHub namespaces are proven by a workflow subject.
    expect((await acx(['keygen', '-o', 'gh'], home)).code).toBe(0);
    const noSubject = await acx(['trust', 'add', 'gh/acx-signing.pub.pem', '--publisher', 'io.github.alice'], home);
    expect(noSubject.code).toBe(EXIT.usage);
    expect(noSubject.stderr).toContain('pass --oidc-subject repo:alice/<repository>');
    const gh = await acx(['trust', 'add', 'gh/acx-signing.pub.pem', '--publisher', 'io.github.alice', '--oidc-subject', 'repo:alice/agents:ref:refs/heads/main', '--json'], home);
    expect(JSON.parse(gh.stdout).entry.namespaceProof).toMatchObject({ method: 'github-oidc', oidcSubject: 'repo:alice/agents:ref:refs/heads/main', oidcIssuer: 'https://token.actions.githubusercontent.com' });
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    const home = tempDir('acx-trust-');
    expect((await acx(['keygen', '-o', 'keys'], home)).code).toBe(0);
    const registry = join(home, 'registry.json');
    writeFileSync(registry, '{"schemaVersion": "acx.trust-registry/1", "keys": [');
    const broken = await acx(['trust', 'add', 'keys/acx-signing.pub.pem', '--publisher', 'com.example', '--registry', registry], home);
    expect(broken.code).toBe(EXIT.failure);
    expect(broken.stderr).toContain(`trust registry ${registry} is not JSON`);
    expect(broken.stderr).toContain('nothing was changed');
    expect(readFileSync(registry, 'utf8'), 'a malformed registry is never overwritten').toBe('{"schemaVersion": "acx.trust-registry/1", "keys": [');
    const keygen = await acx(['keygen', '-o', 'more', '--trust', '--publisher', 'com.example', '--registry', registry], home);
    expect(keygen.code).toBe(EXIT.failure);
    expect(existsSync(join(home, 'more')), 'keygen --trust writes no key it cannot trust').toBe(false);

    const cases: Array<[string[], RegExp]> = [
      [['trust', 'add', 'keys/acx-signing.key.pem', '--publisher', 'com.example'], /that is a private key; a trust registry holds public keys only/],
      [['trust', 'add', 'keys/acx-signing.pub.pem'], /a new registry entry needs its publisher/],
      [['trust', 'add', 'keys/acx-signing.pub.pem', '--publisher', 'Not A Domain'], /is not a reverse-DNS id/],
      [['trust', 'add', 'keys/acx-signing.pub.pem', '--publisher', 'com.example', '--not-after', 'next year'], /--not-after "next year" is not an RFC 3339 time/],
      [['trust', 'add', 'keys/acx-signing.pub.pem', '--publisher', 'com.example', '--not-after', '2020-01-01T00:00:00Z', '--not-before', '2019-01-01T00:00:00Z'], /which has passed/],
      [['trust', 'add', 'missing.pem', '--publisher', 'com.example'], /missing.pem is neither a keyid nor a file/],
      [['trust', 'add', `ed25519:${'0'.repeat(64)}`, '--publisher', 'com.example'], /is not in the trust registry/],
      [['trust', 'revoke', 'ed25519:abc', '--reason', 'superseded'], /"ed25519:abc" is not a keyid/],
      [['keygen', '-o', 'k2', '--trust'], /a new registry entry needs its publisher/],
    ];
    for (const [args, message] of cases) {
      const run = await acx(args, home);
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.stderr, 'no stack trace for a user\'s mistake').not.toMatch(/\n\s+at /);
    }
    expect(existsSync(join(home, 'config', 'trust-registry.json'))).toBe(false);
    expect(existsSync(join(home, 'k2'))).toBe(false);
  });
});
