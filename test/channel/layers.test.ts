// channel/ sits below harness/, app/, frontends/ and platform/ (ARCHITECTURE.md): the client and
// its tools talk to any BaseCradle-compatible platform over HTTP, never to the embedded one's code.
import { describe, expect, it } from 'vitest';
import { importsOutside } from '../support/imports.ts';

describe('the channel layer', () => {
  it('src/channel imports only from src/core, src/util, src/store, src/tools (the Tool contract), itself and npm packages', () => {
    expect(importsOutside('channel', ['core', 'util', 'store', 'tools'])).toEqual([]);
  });
});
