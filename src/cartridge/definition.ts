import { type AgentDefinition, readCartridgeDefinition } from '../agent-def/definition.ts';
import type { Cartridge } from './container.ts';

/** The agent definition in an open cartridge's ROM, read by the one reader (`path` names it in messages). */
export function cartridgeDefinition(cart: Cartridge, path: string): AgentDefinition {
  return readCartridgeDefinition(path, {
    listFiles: (prefix) => cart.listFiles(prefix),
    getFile: (name) => cart.getFile(name),
    allMeta: () => cart.allMeta(),
    romMemory: () => cart.db.prepare("SELECT id, payload FROM memory WHERE zone='rom' ORDER BY id").all() as Array<{ id: string; payload: string }>,
  });
}
