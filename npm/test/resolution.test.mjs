// Which runtime the launcher picks, and that it hands over argv, env, cwd, stdio and the
// exit code unchanged. Fake runtimes only: PATH holds nothing else.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { findOnPath, packageVersion } from '../lib/launcher.js';
import { launcherEnv, makeFakes, runLauncher, tempDir } from './support.mjs';

const skip = process.platform === 'win32' ? 'fake runtimes are shebang scripts' : false;
const VERSION = packageVersion();

/** The fakes that ran as the server (import checks left out). */
const runs = (fakes) => fakes.records().filter((entry) => !entry.check);
const checks = (fakes) => fakes.records().filter((entry) => entry.check).map((e) => e.name);

test('OSIRIS_PYTHON wins over uvx, python3 and python', { skip }, (t) => {
  const onPath = makeFakes(t, { uvx: {}, python3: {}, python: {} });
  const chosen = makeFakes(t, { 'my-python': {} });
  const result = runLauncher([], launcherEnv([onPath.dir], {
    OSIRIS_PYTHON: path.join(chosen.dir, 'my-python'),
  }));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(onPath.records(), []);
  assert.deepEqual(checks(chosen), ['my-python']);
  assert.deepEqual(runs(chosen).map((entry) => [entry.name, entry.argv]),
    [['my-python', ['-m', 'osiris']]]);
});

test('OSIRIS_PYTHON may be a command name on PATH or a relative path', { skip }, (t) => {
  const fakes = makeFakes(t, { uvx: {}, 'python3.12': {} });
  const byName = runLauncher(['health'], launcherEnv([fakes.dir], {
    OSIRIS_PYTHON: 'python3.12',
  }));
  assert.equal(byName.code, 0, byName.stderr);
  const byRelativePath = runLauncher(['health'], launcherEnv([], {
    OSIRIS_PYTHON: './python3.12',
  }), { cwd: fakes.dir });
  assert.equal(byRelativePath.code, 0, byRelativePath.stderr);
  assert.deepEqual(runs(fakes).map((entry) => [entry.name, entry.argv]),
    [['python3.12', ['-m', 'osiris', 'health']], ['python3.12', ['-m', 'osiris', 'health']]]);
});

test('an OSIRIS_PYTHON without osiris is an error, not a fallback', { skip }, (t) => {
  const onPath = makeFakes(t, { uvx: {}, python3: {} });
  const chosen = makeFakes(t, { 'bare-python': { importable: false } });
  const python = path.join(chosen.dir, 'bare-python');
  const result = runLauncher([], launcherEnv([onPath.dir], { OSIRIS_PYTHON: python }));
  assert.equal(result.code, 127);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /^osiris-mcp: OSIRIS_PYTHON=\S+bare-python .*cannot import osiris/);
  assert.match(result.stderr, /No module named 'osiris'/);
  assert.match(result.stderr, /-m pip install mcp-osiris/);
  assert.deepEqual(onPath.records(), []);
  assert.deepEqual(runs(chosen), []);
});

test('an OSIRIS_PYTHON that does not exist is an error, not a fallback', { skip }, (t) => {
  const onPath = makeFakes(t, { uvx: {}, python3: {} });
  const result = runLauncher([], launcherEnv([onPath.dir], {
    OSIRIS_PYTHON: '/nonexistent/python3',
  }));
  assert.equal(result.code, 127);
  assert.equal(result.stdout, '');
  assert.match(result.stderr,
    /^osiris-mcp: OSIRIS_PYTHON=\/nonexistent\/python3 is not an executable file/);
  assert.deepEqual(onPath.records(), []);
});

test('an empty OSIRIS_PYTHON counts as unset', { skip }, (t) => {
  const fakes = makeFakes(t, { python3: {} });
  const result = runLauncher([], launcherEnv([fakes.dir], { OSIRIS_PYTHON: '' }));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(runs(fakes).map((entry) => entry.name), ['python3']);
});

test('uvx comes before a python3 that has osiris, pinned to this version', { skip }, (t) => {
  const fakes = makeFakes(t, { uvx: {}, python3: {}, python: {} });
  const result = runLauncher([], launcherEnv([fakes.dir]));
  assert.equal(result.code, 0, result.stderr);
  // No import check for uvx (it installs the package itself), and python3 is never asked.
  assert.deepEqual(fakes.records().map((entry) => [entry.name, entry.argv]),
    [['uvx', ['--from', `mcp-osiris==${VERSION}`, 'mcp-osiris']]]);
});

test('with arguments, uvx runs the osiris CLI with them', { skip }, (t) => {
  const fakes = makeFakes(t, { uvx: {} });
  const args = ['serve', '--http', '--port', '8765', 'two words', '', '"quoted" $HOME'];
  const result = runLauncher(args, launcherEnv([fakes.dir]));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(runs(fakes).map((entry) => entry.argv),
    [['--from', `mcp-osiris==${VERSION}`, 'osiris', ...args]]);
});

test('uvx is found in a later PATH entry than python3', { skip }, (t) => {
  const first = makeFakes(t, { python3: {} });
  const second = makeFakes(t, { uvx: {} });
  const result = runLauncher([], launcherEnv([first.dir, second.dir]));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(first.records(), []);
  assert.deepEqual(runs(second).map((entry) => entry.name), ['uvx']);
});

test('python3 with osiris runs python -m osiris with the arguments', { skip }, (t) => {
  const fakes = makeFakes(t, { python3: {}, python: {} });
  const args = ['health', '--flag=a b', ''];
  const result = runLauncher(args, launcherEnv([fakes.dir]));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(fakes.records().map((entry) => [entry.name, entry.check === true]),
    [['python3', true], ['python3', false]]);
  assert.deepEqual(runs(fakes)[0].argv, ['-m', 'osiris', ...args]);
});

test('a python3 without osiris is skipped for python', { skip }, (t) => {
  const fakes = makeFakes(t, { python3: { importable: false }, python: {} });
  const result = runLauncher(['--version'], launcherEnv([fakes.dir]));
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(checks(fakes), ['python3', 'python']);
  assert.deepEqual(runs(fakes).map((entry) => [entry.name, entry.argv]),
    [['python', ['-m', 'osiris', '--version']]]);
});

test('the exit code of the server is the exit code of the launcher', { skip }, (t) => {
  for (const code of [0, 1, 2, 7, 126, 127, 255]) {
    const fakes = makeFakes(t, { python3: { behaviour: { exit: code } } });
    assert.equal(runLauncher([], launcherEnv([fakes.dir])).code, code);
  }
});

test('the environment and working directory reach the server unchanged', { skip }, (t) => {
  const fakes = makeFakes(t, { uvx: {} });
  const cwd = tempDir(t);
  const extra = { OSIRIS_HOME: '/some/home', OSIRIS_ROOTS: '/a;/b',
    ODD_VALUE: 'line one\nline two ünïcödé = $x' };
  const env = launcherEnv([fakes.dir], extra);
  const result = runLauncher([], env, { cwd });
  assert.equal(result.code, 0, result.stderr);
  const [run] = runs(fakes);
  for (const [name, value] of Object.entries(env)) assert.equal(run.env[name], value, name);
  assert.equal(fs.realpathSync(run.cwd), fs.realpathSync(cwd));
});

test('stdin and stdout are the server\'s own; the import check reads no stdin', { skip }, (t) => {
  const fakes = makeFakes(t, {
    python3: { drainStdinOnCheck: true, behaviour: { echoStdin: true } },
  });
  const input = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'.repeat(1000);
  const result = runLauncher([], launcherEnv([fakes.dir]), { input });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, input);
  assert.equal(result.stderr, '');
});

test('OSIRIS_LAUNCHER_DEBUG says what was chosen, on stderr only', { skip }, (t) => {
  const fakes = makeFakes(t, { python3: { importable: false }, python: {} });
  const result = runLauncher([], launcherEnv([fakes.dir], { OSIRIS_LAUNCHER_DEBUG: '1' }));
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /python3 \(\S+\) cannot import osiris/);
  assert.match(result.stderr, /using python with osiris 9\.9\.9-fake: \S+python -m osiris/);
});

test('the current directory is not searched for runtimes', { skip }, (t) => {
  const fakes = makeFakes(t, { uvx: {}, python3: {}, python: {} });
  const empty = tempDir(t);
  // Empty PATH entries mean "the current directory" to a shell; not to the launcher.
  const result = runLauncher([], { PATH: `:${empty}::` }, { cwd: fakes.dir });
  assert.equal(result.code, 127);
  assert.deepEqual(fakes.records(), []);
});

test('findOnPath skips directories and files that are not executable', { skip }, (t) => {
  const first = tempDir(t);
  const second = tempDir(t);
  fs.mkdirSync(path.join(first, 'uvx'));
  fs.writeFileSync(path.join(first, 'python3'), '', { mode: 0o644 });
  fs.writeFileSync(path.join(second, 'python3'), '', { mode: 0o755 });
  const env = { PATH: [first, second].join(':') };
  assert.equal(findOnPath('uvx', env, 'linux'), null);
  assert.equal(findOnPath('python3', env, 'linux'), path.join(second, 'python3'));
  assert.equal(findOnPath('python3', {}, 'linux'), null);
});
