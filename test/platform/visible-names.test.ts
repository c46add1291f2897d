// Names people read to decide what something is (a file's, a user's, a timeline's, a session's)
// are refused with a 422 naming the character when they hold one that does not show: a bidi
// override makes "\u202Egnp.exe" read "exe.png". Nothing of a refused request is stored.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { addUser, hashPassword } from '../../src/platform/index.ts';
import { hiddenCharacterProblem } from '../../src/platform/visible-names.ts';
import { startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

let p: TestPlatform | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
  expect(violations).toEqual([]);
});

const RLO = '\u202E';

describe('names with characters that do not show', () => {
  it('an asset whose file name holds a bidi override is refused, naming the character; no file is kept', async () => {
    p = await startTestPlatform();
    const ada = p.user('ada');
    const timeline = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'Room' } } })).body.timeline.uuid;
    const upload = (name: string) => {
      const form = new FormData();
      form.append('asset[file]', new Blob(['MZ'], { type: 'image/png' }), name);
      return p!.api('POST', `/timelines/${timeline}/assets`, { token: ada.token, form });
    };
    const refused = await upload(`${RLO}gnp.exe`);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'validation_failed',
      detail: 'Asset[file] name contains U+202E (RIGHT-TO-LEFT OVERRIDE), which does not show and can disguise the name; remove it.',
      errors: { 'asset[file]': ['name contains U+202E (RIGHT-TO-LEFT OVERRIDE), which does not show and can disguise the name; remove it'] },
    });
    expect((await upload('report\u200B.pdf')).body.errors['asset[file]']).toEqual(['name contains U+200B (ZERO WIDTH SPACE), which does not show and can disguise the name; remove it']);
    expect(readdirSync(join(p.home, 'assets'), { recursive: true })).toEqual([]);
    expect((await p.api('GET', '/assets', { token: ada.token })).body.assets).toEqual([]);

    // Joiners stay: an emoji sequence is a name people use. A long name is cut by code point.
    const coder = '\u{1F469}\u200D\u{1F4BB}';
    expect((await upload(`${coder}.png`)).body.asset.content.file.filename).toBe(`${coder}.png`);
    const long = (await upload('\u{1F600}'.repeat(300))).body.asset.content.file.filename as string;
    expect(long).toBe('\u{1F600}'.repeat(200));
  });

  it("a timeline's and a session's name are refused the same way; nothing is created", async () => {
    p = await startTestPlatform();
    const ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword('correct horse battery') });
    const timeline = await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: `Plans \u2066evil\u2069` } } });
    expect(timeline.status).toBe(422);
    expect(timeline.body.errors).toEqual({ name: ['contains U+2066 (LEFT-TO-RIGHT ISOLATE), which does not show and can disguise the name; remove it'] });
    expect((await p.api('GET', '/timelines', { token: ada.token })).body.timelines).toEqual([]);

    const session = await p.api('POST', '/session', { json: { email_address: 'ada@example.com', password: 'correct horse battery', name: `laptop${RLO}` } });
    expect(session.status).toBe(422);
    expect(session.body.errors).toEqual({ name: ['contains U+202E (RIGHT-TO-LEFT OVERRIDE), which does not show and can disguise the name; remove it'] });
    expect((await p.api('GET', '/users/sessions', { token: ada.token })).body.sessions).toHaveLength(1);
  });

  it("a user's display name is refused as a usage error that names the character", async () => {
    p = await startTestPlatform();
    expect(() => addUser(p!.home, { handle: 'mallory', kind: 'human', name: `ada${RLO}` })).toThrow(
      'Name contains U+202E (RIGHT-TO-LEFT OVERRIDE), which does not show and can disguise the name; remove it.',
    );
    expect(() => addUser(p!.home, { handle: 'mallory', kind: 'human', name: 'ada\u{E0041}' })).toThrow('Name contains U+E0041 (a tag character)');
    expect(addUser(p.home, { handle: 'mallory', kind: 'human', name: 'Mallory' }).name).toBe('Mallory');
  });

  it('every control and invisible format character is named; visible text passes', () => {
    expect(hiddenCharacterProblem('bell\u0007')).toMatch(/^contains U\+0007 \(a control character\)/);
    expect(hiddenCharacterProblem('tab\there')).toMatch(/^contains U\+0009 \(a control character\)/);
    expect(hiddenCharacterProblem('a\u2028b')).toMatch(/^contains U\+2028 \(LINE SEPARATOR\)/);
    expect(hiddenCharacterProblem('x\u206Fy')).toMatch(/^contains U\+206F \(an invisible format character\)/);
    for (const visible of ['exe.png', 'Ünïcödé – ok', 'مرحبا', '日本語.txt', '\u{1F469}\u200D\u{1F4BB}', 'می\u200Cخواهم']) {
      expect(hiddenCharacterProblem(visible)).toBeUndefined();
    }
  });
});
