import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { findExecutable } from '../../src/tools/sandbox/isolation.ts';
import { tempDir, toolContext, removeTempDirs } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * The check-then-create race of issue 10 item 7(b), reproduced with a real attacker: a second
 * process swaps a directory inside the workspace with a symlink to a directory outside
 * (renameat2 RENAME_EXCHANGE) as fast as it can while fs_write creates files below that
 * directory. Each write either lands inside or is refused; nothing may appear outside.
 */
afterAll(removeTempDirs);

const SWAPPER = path.join(import.meta.dirname, '../fixtures/tools/exchange-swapper.py');
const python = findExecutable('python3');
const canRace = process.platform === 'linux' && python !== undefined;
const WRITES = 4000;

interface Swapper {
  child: ChildProcessWithoutNullStreams;
  stop(): Promise<number>;
}

async function startSwapper(first: string, second: string): Promise<Swapper> {
  const child = spawn(python!, [SWAPPER, first, second]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => stdout.includes('ready\n') && resolve());
    child.on('exit', (code) => reject(new Error(`swapper exited ${code}: ${stderr}`)));
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      return Number(/swaps (\d+)/.exec(stdout)?.[1] ?? 0);
    },
  };
}

describe.skipIf(!canRace)(
  canRace ? 'fs_write against a concurrent directory/symlink swapper' : 'fs_write race (skipped: needs Linux and python3 for the renameat2 swapper)',
  () => {
    it(`leaves nothing outside the workspace in ${WRITES} writes and ${WRITES} writes that create a parent`, { timeout: scaled(120_000) }, async () => {
      const root = tempDir('acx-fs-race-');
      const workspace = path.join(root, 'ws');
      const outside = path.join(root, 'outside');
      fs.mkdirSync(path.join(workspace, 'd'), { recursive: true });
      fs.mkdirSync(outside);
      fs.symlinkSync(outside, path.join(workspace, 'l'));
      const [, , write] = createFsTools({ workspace });
      const context = toolContext();

      const swapper = await startSwapper(path.join(workspace, 'd'), path.join(workspace, 'l'));
      let written = 0;
      const refusals = new Set<string>();
      let swaps = 0;
      try {
        for (let i = 0; i < WRITES; i++) {
          for (const target of [`d/f${i}.txt`, `d/n${i}/f.txt`]) {
            try {
              await write.execute!({ path: target, content: 'x' }, context);
              written++;
            } catch (error) {
              refusals.add((error as Error).message.replace(/"[^"]*"/, '"…"'));
            }
          }
        }
      } finally {
        swaps = await swapper.stop();
      }

      // The race was live: the swapper swapped, and some writes were refused while others landed.
      expect(swaps).toBeGreaterThan(1000);
      expect(refusals.size).toBeGreaterThan(0);
      expect(written).toBeGreaterThan(0);
      // The point: not one file or directory was created outside.
      expect(fs.readdirSync(outside)).toEqual([]);
      // And every refusal says why, in words (no raw errno from a half-done walk): the path leads
      // outside, or (under heavy swapping) it kept changing past the walk's retries.
      const explained = /outside the workspace|kept changing while it was being opened; try again/;
      expect([...refusals].every((message) => explained.test(message)), [...refusals].join('\n')).toBe(true);
    });
  },
);
