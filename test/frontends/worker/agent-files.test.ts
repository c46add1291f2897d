// What counts as a change to what an agent is prepared from (src/frontends/worker/agent-files.ts):
// a worker prepares its agent again, and a warm wake drops what it made ready, on each one.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchAgentFiles } from '../../../src/frontends/worker/agent-files.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { waitFor } from '../../support/wait.ts';

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('watching what an agent is prepared from', () => {
  it("sees an edit to the agent or the config home, not the agent's stores at work in them", async () => {
    const root = mkdtempSync(join(tmpdir(), 'acx-agent-files-'));
    const [agent, configHome] = [join(root, 'agent'), join(root, 'home')];
    mkdirSync(agent);
    mkdirSync(configHome);
    writeFileSync(join(agent, 'agent.json'), '{}');
    // The state home inside the config home, as ACX_HOME=ACX_CONFIG_HOME puts it.
    const stateDir = join(configHome, 'agents', 'nova');
    const changed: string[] = [];
    stops.push(watchAgentFiles([agent, configHome], [stateDir, join(stateDir, 'workspace')], (path) => changed.push(path), createMemoryLogger('debug')));
    // What stores do: the agent's state directory made on the way, a journal, a router's database and its WAL.
    mkdirSync(join(stateDir, 'workspace'), { recursive: true });
    writeFileSync(join(stateDir, 'journal.db'), 'x');
    writeFileSync(join(configHome, 'router.db'), 'x');
    writeFileSync(join(configHome, 'router.db-wal'), 'x');
    // What a person does, after them: the agent's definition, then the config home's model parameters.
    writeFileSync(join(agent, 'agent.json'), '{"model":"openai:m"}');
    writeFileSync(join(configHome, 'model_params.json'), '{}');
    await waitFor('both edits to be seen', () => changed.includes(join(configHome, 'model_params.json')) && changed.includes(join(agent, 'agent.json')), { withinMs: 30_000 });
    expect([...new Set(changed)].sort()).toEqual([join(agent, 'agent.json'), join(configHome, 'model_params.json')]);
  });
});
