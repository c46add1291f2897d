// `acx platform …` as a user runs it: a real child process on the pinned Node, its own temp homes.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ACX_BIN, cleanEnv, ROOT, runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';
import { call } from '../support/platform.ts';

const children: Array<ReturnType<typeof spawn>> = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
});

/** Starts `acx platform serve …` and resolves with its URL (the first line it prints). */
async function serve(home: string, ...args: string[]): Promise<{ url: string; stderr: () => string; child: ReturnType<typeof spawn> }> {
  const child = spawn(process.execPath, [ACX_BIN, 'platform', 'serve', '--port', '0', '--home', home, ...args], { cwd: ROOT, env: { ...cleanEnv(), ACX_HOME: home, HOME: home } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return { url, stderr: () => stderr, child };
}

describe('acx platform', () => {
  it('serve prints its URL; user add, run beside it, prints a token the server takes', async () => {
    const home = tempDir('acx-platform-cli-');
    const server = await serve(home);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const added = await runAcx(['platform', 'user', 'add', '--handle', 'nova', '--kind', 'ai', '--home', home], { home });
    expect(added.status).toBe(0);
    const token = added.stdout.trim();
    expect(token).toMatch(/^bc_uat_[A-Za-z0-9]{32}$/);
    const me = await call(server.url, 'GET', '/users/dashboard', { token });
    expect(me.body.identity).toMatchObject({ handle: 'nova', kind: 'ai' });
    // The page is there for a person.
    expect((await fetch(`${server.url}/`)).headers.get('content-type')).toBe('text/html; charset=utf-8');
    // The token was shown once and is in no log line.
    server.child.kill('SIGTERM');
    await once(server.child, 'exit');
    expect(server.child.exitCode).toBe(0);
    expect(server.stderr()).toContain(`platform listening url=${server.url}`);
    expect(server.stderr()).not.toContain(token);
  });

  it('user add --trust, --json and --email with --password-stdin; user list; user token', async () => {
    const home = tempDir('acx-platform-cli-');
    await runAcx(['platform', 'user', 'add', '--handle', 'ada', '--kind', 'human', '--email', 'ada@example.com', '--password-stdin', '--home', home], { home, input: 'a long passphrase\n' });
    const nova = await runAcx(['platform', 'user', 'add', '--handle', 'nova', '--kind', 'ai', '--name', 'Nova', '--trust', 'ada', '--json', '--home', home], { home });
    expect(JSON.parse(nova.stdout)).toMatchObject({ handle: 'nova', name: 'Nova', kind: 'ai' });
    const list = await runAcx(['platform', 'user', 'list', '--home', home], { home });
    expect(list.stdout.split('\n').filter(Boolean).map((line) => line.split('\t').slice(0, 2).join(' '))).toEqual(['@ada human', '@nova ai']);
    const another = await runAcx(['platform', 'user', 'token', '--handle', '@nova', '--home', home], { home });
    expect(another.stdout.trim()).not.toBe(JSON.parse(nova.stdout).token);

    const server = await serve(home);
    const session = await call(server.url, 'POST', '/session', { json: { email_address: 'ada@example.com', password: 'a long passphrase', name: 'cli test' } });
    expect(session.status).toBe(201);
    const users = await call(server.url, 'GET', '/users', { token: session.body.token });
    expect(users.body.users).toEqual([expect.objectContaining({ handle: 'nova', trust: { you_trust: true, trusts_you: true, mutual: true } })]);
  });

  it('bad input says what was wrong, with no stack trace, and changes nothing', async () => {
    const home = tempDir('acx-platform-cli-');
    const kind = await runAcx(['platform', 'user', 'add', '--handle', 'x', '--kind', 'robot', '--home', home], { home });
    expect(kind.status).toBe(2);
    expect(kind.stderr).toContain('--kind must be ai or human, not "robot"');
    const handle = await runAcx(['platform', 'user', 'add', '--handle', 'no spaces', '--kind', 'ai', '--home', home], { home });
    expect(handle.status).toBe(2);
    expect(handle.stderr).toContain('Handle must be 1-30 letters, digits, "_" or "-"');
    const trust = await runAcx(['platform', 'user', 'add', '--handle', 'nova', '--kind', 'ai', '--trust', 'ghost', '--home', home], { home });
    expect(trust.stderr).toContain('No user @ghost on this platform.');
    const password = await runAcx(['platform', 'user', 'add', '--handle', 'ada', '--kind', 'human', '--email', 'a@b.c', '--home', home], { home });
    expect(password.stderr).toContain('--email and --password-stdin go together');
    for (const run of [kind, handle, trust, password]) expect(run.stderr).not.toMatch(STACK_FRAME);
    expect((await runAcx(['platform', 'user', 'list', '--json', '--home', home], { home })).stdout.trim()).toBe('[]');
    const port = await runAcx(['platform', 'serve', '--port', 'many', '--home', home], { home });
    expect(port.status).toBe(2);
    expect(port.stderr).toContain('--port must be an integer from 0 to 65535, not "many"');
  });

  it('serve reads its subscribers and secret from the environment and delivers signed', async () => {
    const home = tempDir('acx-platform-cli-');
    const { startWebhookReceiver } = await import('../support/webhook-receiver.ts');
    const receiver = await startWebhookReceiver();
    try {
      const ada = (await runAcx(['platform', 'user', 'add', '--handle', 'ada', '--kind', 'human', '--home', home], { home })).stdout.trim();
      const nova = JSON.parse((await runAcx(['platform', 'user', 'add', '--handle', 'nova', '--kind', 'ai', '--trust', 'ada', '--json', '--home', home], { home })).stdout);
      const child = spawn(process.execPath, [ACX_BIN, 'platform', 'serve', '--port', '0', '--home', home], {
        cwd: ROOT,
        env: { ...cleanEnv(), HOME: home, ACX_PLATFORM_DELIVER_TO: receiver.url, ACX_PLATFORM_WEBHOOK_SECRET_NOVA: 'nova-key' },
      });
      children.push(child);
      const url = await new Promise<string>((resolve) => child.stdout!.setEncoding('utf8').once('data', (chunk: string) => resolve(chunk.split('\n')[0]!)));
      const timeline = (await call(url, 'POST', '/timelines', { token: ada, json: { timeline: { name: 'x' } } })).body.timeline.uuid;
      await call(url, 'POST', `/timelines/${timeline}/participations`, { token: ada, json: { user_id: nova.uuid } });
      await call(url, 'POST', `/timelines/${timeline}/messages`, { token: ada, json: { message: { body: 'hi' } } });
      const [delivery] = await receiver.waitFor(1);
      const { createHmac } = await import('node:crypto');
      expect(delivery!.headers['x-basecradle-signature']).toBe(`sha256=${createHmac('sha256', 'nova-key').update(delivery!.raw).digest('hex')}`);
    } finally {
      await receiver.close();
    }
  });
});
