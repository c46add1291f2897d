// Issue 33 §2 from the command line: `acx sessions fork` and `acx sessions rewind` on a session
// an engine agent ran against a real workspace (its fs_write calls journaled), run as the acx
// process a user runs; checked from the output, the exit code, the journal and the files.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { Journal } from '../../src/store/journal.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';

let home: string;
let workspace: string;
const journalPath = () => join(home, 'agents/writer/journal.db');
const turns = (sessionId: string) => {
  const journal = new Journal(journalPath());
  try {
    return journal.turns(sessionId).map((turn) => turn.finalText);
  } finally {
    journal.close();
  }
};

/** Session "draft" of agent "writer": turn 1 writes notes.txt "v1", turn 2 writes "v2". */
beforeEach(async () => {
  home = tempDir('acx-branch-');
  workspace = mkdtempSync(join(tmpdir(), 'acx-branch-ws-'));
  writeFileSync(join(workspace, 'notes.txt'), 'original');
  let call = 0;
  const script = [
    { toolCalls: [{ name: 'fs_write', input: { path: 'notes.txt', content: 'v1' } }] },
    { text: 'wrote v1' },
    { toolCalls: [{ name: 'fs_write', input: { path: 'notes.txt', content: 'v2' } }] },
    { text: 'wrote v2' },
  ];
  const harness = createEngineHarness({ model: fromLanguageModel(scriptedModel(() => script[call++]!)), journalPath: journalPath() });
  const agent = new HarnessAgent({ harness, tools: createFsTools({ workspace }), permissionMode: 'allow-all' });
  const session = await agent.createSession({ sessionId: 'draft' });
  await agent.generate({ session, prompt: 'write v1' });
  await agent.generate({ session, prompt: 'write v2' });
  await harness.close!();
});

describe('acx sessions fork and rewind (e2e)', { timeout: 120_000 }, () => {
  it('fork --at-turn 1 makes a new session with turn 1; the original keeps both', async () => {
    const forked = await runAcx(['sessions', 'fork', 'draft', '--at-turn', '1', '--json'], { home });
    expect(forked.status, forked.stderr).toBe(0);
    const out = JSON.parse(forked.stdout) as { agent: string; id: string; forkedFrom: string; turns: number };
    expect(out).toEqual({ agent: 'writer', id: expect.stringMatching(/^[0-9a-f-]{36}$/), forkedFrom: 'draft', turns: 1 });
    expect(turns(out.id)).toEqual(['wrote v1']);
    expect(turns('draft')).toEqual(['wrote v1', 'wrote v2']);

    const plain = await runAcx(['sessions', 'fork', 'draft'], { home });
    expect(plain.stdout).toMatch(/^Forked session draft as [0-9a-f-]{36} \(2 turns\)\.\n$/);
  });

  it('rewind --to-turn 1 --files cuts the transcript and puts notes.txt back as turn 1 left it', async () => {
    const rewound = await runAcx(['sessions', 'rewind', 'draft', '--to-turn', '1', '--files'], { home });
    expect(rewound.status, rewound.stderr).toBe(0);
    expect(rewound.stdout).toBe('Rewound session draft to turn 1: 1 turn removed.\n  restored notes.txt\n');
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('v1');
    expect(turns('draft')).toEqual(['wrote v1']);
  });

  it('rewind refuses with exit 3, naming the file, when someone else changed it since; nothing changes', async () => {
    writeFileSync(join(workspace, 'notes.txt'), 'edited by hand');
    const refused = await runAcx(['sessions', 'rewind', 'draft', '--to-turn', '0', '--files'], { home });
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('Cannot rewind session draft: a file cannot be restored: notes.txt (changed by someone else since the agent last wrote it). Nothing was changed.');
    expect(refused.stderr).not.toMatch(STACK_FRAME);
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('edited by hand');
    expect(turns('draft')).toEqual(['wrote v1', 'wrote v2']);
  });

  it('usage errors in the two-line form: a missing --to-turn, a turn past the end', async () => {
    const missing = await runAcx(['sessions', 'rewind', 'draft'], { home });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe("acx: --to-turn is required\n  → run `acx sessions rewind --help` for its usage\n");
    const past = await runAcx(['sessions', 'fork', 'draft', '--at-turn', '5'], { home });
    expect(past.status).toBe(2);
    expect(past.stderr).toBe('acx: Session draft has 2 turns; the turn to fork at is a whole number from 0 to 2, not 5.\n  → Turns are numbered from 1 in the order they started (`acx sessions show` lists them).\n');
  });
});
