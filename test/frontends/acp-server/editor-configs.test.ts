// docs/acp.md "Adding it to an editor" (issue 26, item 13): the Zed, JetBrains, CodeCompanion and
// avante.nvim configurations all run one command line, and that command line — with the
// docs' `/path/to/acx` replaced by this checkout — starts `acx acp` from any directory, with a
// PATH that has none of the checkout's tools on it, as an agent (examples/project-coder) that
// reads and edits the project an editor has open. Driven by the ACP SDK's client with Zed's
// capabilities; the model is the local model server.
import fs from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { expect, it } from 'vitest';
import { editorBuffers, updatesOf, ZED_CAPABILITIES } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const bed = useAcpTestBed('acx-acp-editor-configs-');

/** The "Adding it to an editor" section of docs/acp.md. */
function setupSection(): string {
  const text = fs.readFileSync(path.join(ROOT, 'docs/acp.md'), 'utf8');
  const start = text.indexOf('### Adding it to an editor');
  return text.slice(start, text.indexOf('\n### ', start + 1));
}

/** Each editor's part of the section: from its bold heading line (`**Zed**`) to the next. */
function editors(section: string): Array<{ editor: string; text: string }> {
  const headings = [...section.matchAll(/^\*\*([^*\n]+)\*\*(?: \([^\n]*\))?$/gm)];
  return headings.map((heading, i) => ({ editor: heading[1]!, text: section.slice(heading.index, headings[i + 1]?.index) }));
}

const fenced = (text: string, language: string) => /```(\w+)\n([\s\S]*?)```/.exec(text)?.[1] === language ? /```\w+\n([\s\S]*?)```/.exec(text)![1]! : undefined;
const quoted = (lua: string) => [...lua.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);

/** Every editor's command line as the docs give it (the command, then its arguments). */
function commandLines(): Record<string, string[]> {
  const lines: Record<string, string[]> = {};
  for (const { editor, text } of editors(setupSection())) {
    const json = fenced(text, 'json');
    const lua = fenced(text, 'lua');
    if (json) {
      const acx = (JSON.parse(json) as { agent_servers: Record<string, { command: string; args: string[] }> }).agent_servers.acx!;
      lines[editor] = [acx.command, ...acx.args];
    } else if (lua) {
      // CodeCompanion: commands.default = { command, args… }; avante: command = "…", args = { … }.
      const listed = /default = \{([^}]*)\}/.exec(lua) ?? /command = ("[^"]*"),\s*args = \{([^}]*)\}/.exec(lua);
      lines[editor] = quoted(listed![0]);
    }
  }
  return lines;
}

it('gives every editor the same command line, which starts acx from anywhere as an agent that reads and edits the project', async () => {
  const lines = commandLines();
  expect(Object.keys(lines)).toEqual(['Zed', 'JetBrains IDEs', 'Neovim with CodeCompanion.nvim', 'Neovim with avante.nvim']);
  const expected = ['/path/to/acx/node_modules/.bin/node', '/path/to/acx/bin/acx.js', 'acp', '/path/to/acx/examples/project-coder'];
  for (const [editor, line] of Object.entries(lines)) expect([editor, line]).toEqual([editor, expected]);

  // Started as an editor would: elsewhere, with a PATH of system directories only.
  const [command, ...args] = expected.map((part) => part.replace('/path/to/acx', ROOT));
  const elsewhere = path.join(bed.home, 'somewhere-else');
  const project = path.join(bed.home, 'project');
  for (const dir of [elsewhere, project]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
  const acx = bed.start({ commandLine: { command: command!, args, cwd: elsewhere }, env: { PATH: '/usr/bin:/bin', ACX_MODEL: '' } });
  const buffers = new Map([[path.join(project, 'README.md'), '# Demo (unsaved)\n']]);
  acx.files = editorBuffers(buffers);
  const init = await acx.initialize(ZED_CAPABILITIES);
  expect(init.agentInfo?.title).toBe('acx: Project Coder');

  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
  const first = bed.model.requests.length;
  bed.model.enqueue(
    { toolCalls: [{ id: 'list', name: 'fs_list', input: {} }] },
    { toolCalls: [{ id: 'read', name: 'fs_read', input: { path: 'README.md' } }] },
    { toolCalls: [{ id: 'edit', name: 'fs_write', input: { path: 'README.md', content: '# Demo\n\nHow to run it.\n' } }] },
    { text: 'Added a line on how to run it.' },
  );
  const answer = await acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Say how to run it in the README.' }] });
  expect(answer.stopReason).toBe('end_turn');
  // The agent's own model (agent.json), and its file tools offered.
  expect(bed.model.requests[first]!.view.model).toBe('gpt-5.4-mini');
  expect(bed.model.requests[first]!.view.tools).toEqual(expect.arrayContaining(['fs_list', 'fs_read', 'fs_write']));
  // It read the editor's unsaved buffer and its edit landed there, with the diff the editor shows.
  const readResult = bed.model.requests.flatMap((r) => r.view.messages.flatMap((m) => m.toolResults ?? [])).find((r) => r.callId === 'read');
  expect(readResult?.output).toContain('# Demo (unsaved)');
  expect(buffers.get(path.join(project, 'README.md'))).toBe('# Demo\n\nHow to run it.\n');
  const edit = updatesOf(acx, sessionId).filter((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'edit').at(-1);
  expect(edit).toMatchObject({
    status: 'completed',
    content: [
      { type: 'diff', path: path.join(project, 'README.md'), oldText: '# Demo (unsaved)\n', newText: '# Demo\n\nHow to run it.\n' },
      { type: 'content', content: { type: 'text', text: 'Wrote 23 bytes to README.md.' } },
    ],
  });
});
