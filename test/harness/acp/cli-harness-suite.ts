// `acx run … --harness NAME` end to end, as a user runs it: a real acx process drives a real ACP
// agent (installed by the adapter's npm-simple bootstrap, cached in ACX_CACHE_DIR, default
// ~/.cache/acx) against the local model server. The agent directory's instructions, skills and
// host tools reach the agent; a cartridge's handshake runs against the tools served over MCP.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ACPHarness } from '../../../src/harness/acp/create.ts';
import { createSqliteMemoryProvider } from '../../../src/memory/provider.ts';
import { ROOT, runAcx, saveRows, tempDir } from '../../support/cartridge-fixtures.ts';
import { startModelServer, type ModelServer, type RecordedRequest, type ResponderResult } from '../../support/model-server.ts';
import { toolNamesOf } from './real-agent-suite.ts';
import { scaled } from '../../support/time-scale.ts';

export interface CliHarnessOptions {
  /** The --harness value. */
  harness: string;
  /** The profile's harnessId (names the sandbox directories) and its skills directory below $HOME. */
  harnessId: string;
  skillsDirectory: string;
  /** Installs (or reuses) the agent once, so the runs measure acx, not npm. */
  bootstrap: () => ACPHarness;
  /** The environment pointing the agent at the model server (base URL and key), and a closer. */
  upstream: (server: ModelServer) => Promise<{ env: NodeJS.ProcessEnv; close?: () => Promise<void> }>;
  /** Where the real key must arrive upstream. */
  keyHeader: (r: RecordedRequest) => string | undefined;
  /** Extra flags every run needs (e.g. Codex supports only --permission-mode allow-all). */
  args?: string[];
  /**
   * A --model to pass (one the agent offers, not its default) and what the upstream request's
   * model must then look like; a run without --model must not match it.
   */
  model: { flag: string; expect: RegExp };
  /** How the agent names acx's MCP tools for its model (default `mcp__acx__`). */
  toolPrefix?: string;
  /** Answers the agent's own side requests (routing, next-speaker checks), if it makes any. */
  sideRequest?: (r: RecordedRequest) => ResponderResult | undefined;
  /**
   * When the agent does not reliably reopen a session in a new process, what acx reports when it
   * cannot (a WARNING whose text matches this); the run then goes on in a new agent session.
   * Either outcome must then be whole: reopened and remembering, or afresh and saying so.
   */
  mayNotResume?: RegExp;
}

export const FREEZE = 'The release freeze starts on 12 December.';
const CODE_WORD = 'PLUM-7731';
const RECALL_QUESTION = 'What is the code word?';
export const REPLY = 'Noted: the release freeze starts on 12 December.';
const PROMPT = 'Remember that the release freeze starts on 12 December.';
const KEY = 'sk-e2e-harness-real-0123456789';

interface Seen {
  model: string;
  tools: string[];
  body: string;
  skillFiles: Record<string, string>;
}

export function describeCliHarness(options: CliHarnessOptions): void {
  describe(`acx run --harness ${options.harness} (real agent, local model server)`, { timeout: scaled(180_000) }, () => {
    let root: string;
    let server: ModelServer;
    let upstream: { env: NodeJS.ProcessEnv; close?: () => Promise<void> };
    const seen: Seen[] = [];
    let sandboxRoot = '';

    /** Skill files below every sandbox home of this harness that exists right now. */
    const skillFilesNow = (): Record<string, string> => {
      const out: Record<string, string> = {};
      if (!sandboxRoot || !existsSync(sandboxRoot)) return out;
      for (const dir of readdirSync(sandboxRoot).filter((d) => d.startsWith(`acx-acp-${options.harnessId}-`))) {
        const skills = join(sandboxRoot, dir, 'home', options.skillsDirectory);
        if (!existsSync(skills)) continue;
        for (const name of readdirSync(skills)) {
          const file = join(skills, name, 'SKILL.md');
          if (existsSync(file)) out[name] = readFileSync(file, 'utf8');
        }
      }
      return out;
    };

    /** The main request offers acx's tools as <prefix><name>; side requests (titles, quota) do not. */
    const prefix = options.toolPrefix ?? 'mcp__acx__';
    const respond = (r: RecordedRequest): ResponderResult => {
      const side = options.sideRequest?.(r);
      if (side) return side;
      const asked = r.view.messages.filter((m) => m.role === 'user').at(-1)?.text ?? '';
      if (asked.includes(RECALL_QUESTION)) {
        return { text: JSON.stringify(r.body).includes(CODE_WORD) ? `The code word is ${CODE_WORD}.` : 'I do not know the code word.' };
      }
      const tools = toolNamesOf(r);
      const writeTool = tools.find((t) => t === `${prefix}memory_write`) ?? tools.find((t) => t === `${prefix}add_memory`);
      if (!writeTool) return { text: 'ok' };
      if (r.view.messages.at(-1)?.role === 'tool') return { text: REPLY };
      seen.push({ model: r.view.model, tools, body: JSON.stringify(r.body), skillFiles: skillFilesNow() });
      const input = writeTool.endsWith('memory_write') ? { key: 'release-freeze', value: FREEZE } : { summary: FREEZE };
      return { toolCalls: [{ name: writeTool, input }] };
    };

    const runEnv = (name: string): NodeJS.ProcessEnv => {
      sandboxRoot = join(root, name, 'tmp');
      mkdirSync(sandboxRoot, { recursive: true });
      return {
        ACX_HOME: join(root, name, 'state'),
        ACX_CONFIG_HOME: join(root, name, 'config'),
        ACX_HARNESS: '',
        ACX_TRUST_REGISTRY: '',
        ACX_ALLOW_PORTABLE: '',
        ...upstream.env,
        // The local sandbox puts each session's home below the OS temp dir: here, where the test looks.
        TMPDIR: sandboxRoot,
      };
    };

    beforeAll(async () => {
      root = tempDir(`acx-e2e-${options.harness}-`);
      server = await startModelServer({ fallback: respond });
      upstream = await options.upstream(server);
      await options.bootstrap().bootstrap();
    }, scaled(600_000));

    afterAll(async () => {
      await upstream?.close?.();
      await server?.close();
    });

    it('runs an agent directory: instructions, skills, model and an acx host tool reach the agent', async () => {
      const before = seen.length;
      const args = ['run', join(ROOT, 'examples/notes-keeper'), PROMPT, '--harness', options.harness, ...(options.args ?? []), '--model', options.model.flag];
      const run = await runAcx(args, runEnv('dir'));
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe(REPLY);

      const main = seen[before]!;
      // The agent's instructions went through the profile's instruction mapping to the model.
      expect(main.body).toContain('You are Notes Keeper, the memory of a small software team.');
      expect(main.body).not.toContain('Operator note'); // HTML comments never reach the model
      // Its host tools are offered over acx's MCP server.
      expect(main.tools).toEqual(expect.arrayContaining(['memory_write', 'memory_search', 'load_skill'].map((t) => prefix + t)));
      // Its skill was in the sandbox home's skills directory while the agent ran, and the agent loaded it.
      expect(main.skillFiles['release-notes']).toMatch(/^---\nname: release-notes\ndescription: "Write release notes/);
      expect(main.skillFiles['release-notes']).toContain('Group what you find under Added, Changed and Fixed.');
      expect(main.body).toContain('release-notes: Write release notes for the team from what you remember about a release.');
      // --model went through the profile's model mapping to the agent's model request.
      expect(main.model).toMatch(options.model.expect);
      // The key was brokered: the agent had a placeholder, the upstream got the real one.
      expect(options.keyHeader(server.requests.at(-1)!)).toContain(KEY);

      // memory_write ran in acx and wrote acx's memory.
      const memory = createSqliteMemoryProvider({ path: join(root, 'dir/state/agents/notes-keeper/memory.db') });
      try {
        expect((await memory.store.get('release-freeze'))?.value).toBe(FREEZE);
      } finally {
        await memory.close();
      }
      // The run cleaned up its sandbox home.
      expect(readdirSync(sandboxRoot).filter((d) => d.startsWith('acx-acp-'))).toEqual([]);
    });

    const resumeTitle = options.mayNotResume
      ? 'a session named with --session: reopened and remembered, or (when the agent cannot) acx says so and the run goes on afresh'
      : 'reopens a session named with --session in a later run: the agent remembers the earlier conversation';
    it(resumeTitle, async () => {
      const env = { ...runEnv('resume'), ACX_LOG_LEVEL: 'info' };
      const agent = join(ROOT, 'examples/notes-keeper');
      const extra = [...(options.args ?? []), '--model', options.model.flag];
      const first = await runAcx(['run', agent, `Remember that the code word is ${CODE_WORD}.`, '--harness', options.harness, '--session', 'chat-1', ...extra], env);
      expect(first.code, first.stderr).toBe(0);
      const kept = join(root, 'resume/state/agents/notes-keeper/acp-sessions', options.harnessId, 'chat-1');
      expect(existsSync(join(kept, 'acp-session.json')), 'the named session is kept for the next run').toBe(true);

      const second = await runAcx(['run', agent, RECALL_QUESTION, '--harness', options.harness, '--session', 'chat-1', ...extra], env);
      expect(second.code, second.stderr).toBe(0);
      if (options.mayNotResume && !/INFO acp session resumed /.test(second.stderr)) {
        expect(second.stderr).toMatch(options.mayNotResume);
        expect(second.stdout.trim()).toBe('I do not know the code word.');
      } else {
        expect(second.stderr).toMatch(/INFO acp session resumed .*session=chat-1 acpSession=\S+ via=session\/(resume|load)/);
        expect(second.stdout.trim()).toBe(`The code word is ${CODE_WORD}.`);
      }

      // Another session name starts afresh: the code word is not in its history.
      const other = await runAcx(['run', agent, RECALL_QUESTION, '--harness', options.harness, '--session', 'chat-2', ...extra], env);
      expect(other.code, other.stderr).toBe(0);
      expect(other.stdout.trim()).toBe('I do not know the code word.');

      // acx cleanup removes the kept sandbox with the rest of the session.
      const cleaned = await runAcx(['cleanup', agent, '--session', 'chat-1'], env);
      expect(cleaned.code, cleaned.stderr).toBe(0);
      expect(cleaned.stdout).toMatch(/^removed chat-1 \(\d+ messages, 0 wake events, 1 ACP agent session\)/);
      expect(existsSync(kept)).toBe(false);
    });

    it('boots a cartridge: the handshake accepts the MCP-served tools and writes land in SAVE', async () => {
      const file = join(root, 'notes-keeper.acx');
      copyFileSync(join(ROOT, 'examples/cartridges/notes-keeper.acx'), file); // runs write SAVE
      const before = seen.length;
      const run = await runAcx(['run', file, PROMPT, '--harness', options.harness, '--allow-portable', ...(options.args ?? [])], runEnv('cart'));
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe(REPLY);

      const main = seen[before]!;
      // Without --model the agent keeps its own default: the model seen above came from the flag.
      expect(main.model).not.toMatch(options.model.expect);
      // The tools bound to the cartridge's required roles are the ones the agent was given.
      expect(main.tools).toEqual(expect.arrayContaining(['execute', 'dispatch', 'add_memory', 'search_memory'].map((t) => prefix + t)));
      expect(main.body).toContain('Notes Keeper');
      expect(main.skillFiles['release-notes']).toContain('name: release-notes');

      // The accepted descriptor was persisted, and add_memory wrote a field-learned SAVE record.
      const rows = saveRows(file);
      expect(rows.files).toContain('save/compliance/harness-compliance.json');
      expect(rows.memory.map((m) => JSON.parse(m.payload).summary)).toEqual([FREEZE]);
    });
  });
}

export { KEY as CLI_HARNESS_KEY };
