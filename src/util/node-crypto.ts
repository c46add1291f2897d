/**
 * node:crypto, loaded on first use rather than when a module that may hash is imported: loading it
 * costs some 3 ms, and the commands that run once per event (a wake for an answered event) never
 * hash anything.
 */
export function nodeCrypto(): typeof import('node:crypto') {
  return process.getBuiltinModule('node:crypto');
}
