// When no runtime can run OSIRIS: one message on stderr saying what to install, nothing on
// stdout (it belongs to JSON-RPC), exit 127.

import assert from 'node:assert/strict';
import test from 'node:test';

import { launcherEnv, makeFakes, runLauncher, tempDir } from './support.mjs';

const skip = process.platform === 'win32' ? 'fake runtimes are shebang scripts' : false;

/** The launcher's message: every line of stderr, each prefixed with the launcher's name. */
function assertOneMessage(stderr) {
  const lines = stderr.trimEnd().split('\n');
  assert.ok(lines.length <= 2, stderr);
  for (const line of lines) assert.match(line, /^osiris-mcp: /);
  assert.match(stderr, /pip install mcp-osiris/);
  assert.match(stderr, /OSIRIS_PYTHON/);
}

test('nothing on PATH: what to install, on stderr, exit 127', (t) => {
  const empty = tempDir(t);
  const result = runLauncher(['serve'], launcherEnv([empty]));
  assert.equal(result.code, 127);
  assert.equal(result.stdout, '');
  assertOneMessage(result.stderr);
  assert.match(result.stderr,
    /\(OSIRIS_PYTHON unset; uvx not on PATH; python3 not on PATH; python not on PATH\)/);
});

test('no PATH at all is the same error', () => {
  const result = runLauncher([], {});
  assert.equal(result.code, 127);
  assert.equal(result.stdout, '');
  assertOneMessage(result.stderr);
});

test('pythons without osiris: each named, then what to install', { skip }, (t) => {
  const fakes = makeFakes(t, {
    python3: { importable: false }, python: { importable: false },
  });
  const result = runLauncher([], launcherEnv([fakes.dir]));
  assert.equal(result.code, 127);
  assert.equal(result.stdout, '');
  assertOneMessage(result.stderr);
  assert.match(result.stderr, /python3 \(\S+\/python3\) cannot import osiris; python \(\S+\/python\) cannot import osiris/);
  // Only the import checks ran.
  assert.deepEqual(fakes.records().map((entry) => [entry.name, entry.check]),
    [['python3', true], ['python', true]]);
});
