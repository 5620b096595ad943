// End to end against the real Python server: MCP tools/list through the launcher from
// the source tree, from the `npm pack` tarball, and through `npx` on that tarball.
// Needs a Python with OSIRIS (TEST_OSIRIS_PYTHON, else python3 on PATH), npm and tar.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { findOnPath, packageVersion } from '../lib/launcher.js';
import {
  EXPECTED_TOOLS, NPM_DIR, findOsirisPython, listToolsThroughLauncher, runLauncher,
  skipOrFail, tempDir,
} from './support.mjs';

const PYTHON = findOsirisPython();
const NPM_CLI = 'npm';

/** The environment of a real run: ours, minus anything that would choose for the test. */
function serverEnv(t, extra = {}) {
  const env = { ...process.env };
  delete env.OSIRIS_LAUNCHER_DEBUG;
  return { ...env, OSIRIS_HOME: tempDir(t, 'osiris-mcp-home-'), ...extra };
}

function needPython(t) {
  if (PYTHON === null) {
    skipOrFail(t, 'no Python with osiris (set TEST_OSIRIS_PYTHON, or put one on PATH)');
    return false;
  }
  return true;
}

/** `base` plus settings that keep npm off the user's cache and config and the network. */
function isolatedNpmEnv(t, base = process.env) {
  const cache = tempDir(t, 'osiris-mcp-npm-cache-');
  return { ...base, npm_config_cache: cache, npm_config_userconfig: path.join(cache, 'npmrc'),
    npm_config_offline: 'true', npm_config_update_notifier: 'false',
    npm_config_fund: 'false', npm_config_audit: 'false', npm_config_yes: 'true' };
}

function npm(t, args, cwd) {
  const result = spawnSync(NPM_CLI, args, {
    cwd, encoding: 'utf8', timeout: 120_000, env: isolatedNpmEnv(t),
  });
  if (result.error) throw result.error;
  assert.equal(result.status, 0, `npm ${args.join(' ')}:\n${result.stderr}`);
  return result.stdout;
}

function haveTool(command, args = ['--version']) {
  const probe = spawnSync(command, args, { stdio: 'ignore', timeout: 60_000 });
  return probe.status === 0;
}

/** `npm pack` into a temp dir: the tarball's path and npm's list of its files. */
function pack(t) {
  const out = tempDir(t, 'osiris-mcp-pack-');
  const [report] = JSON.parse(npm(t, ['pack', '--json', '--pack-destination', out], NPM_DIR));
  return { tarball: path.join(out, report.filename), report };
}

test('tools/list through the launcher, with OSIRIS_PYTHON', { timeout: 60_000 }, async (t) => {
  if (!needPython(t)) return;
  const cwd = tempDir(t);
  const { init, tools } = await listToolsThroughLauncher(t, serverEnv(t, {
    OSIRIS_PYTHON: PYTHON,
  }), { cwd });
  assert.equal(init.result.protocolVersion, '2025-11-25');
  for (const name of EXPECTED_TOOLS) assert.ok(tools.includes(name), `${name} in ${tools}`);
});

test('tools/list through a real python3 found on PATH', { timeout: 60_000 }, async (t) => {
  if (!needPython(t)) return;
  // PATH is cut down to the directory of that Python, which only works for a virtual
  // environment (its python3 needs nothing else on PATH) without a uvx of its own.
  const python = PYTHON.includes(path.sep) ? PYTHON : findOnPath(PYTHON);
  const bin = path.dirname(python);
  if (!fs.existsSync(path.join(bin, '..', 'pyvenv.cfg'))) {
    return t.skip(`${python} is not in a virtual environment`);
  }
  if (findOnPath('uvx', { PATH: bin }) !== null) return t.skip(`${bin} has a uvx`);
  const env = serverEnv(t, { PATH: bin, OSIRIS_LAUNCHER_DEBUG: '1' });
  delete env.OSIRIS_PYTHON;
  const { tools, stderr } = await listToolsThroughLauncher(t, env, { cwd: tempDir(t) });
  assert.match(stderr, /osiris-mcp: using python3 with osiris /);
  assert.deepEqual(EXPECTED_TOOLS.filter((name) => !tools.includes(name)), []);
});

test('arguments reach the real osiris CLI: --version', { timeout: 60_000 }, (t) => {
  if (!needPython(t)) return;
  const result = runLauncher(['--version'], serverEnv(t, { OSIRIS_PYTHON: PYTHON }),
    { cwd: tempDir(t) });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), `osiris ${packageVersion()}`);
});

test('npm pack ships bin, lib, package.json, README and LICENSE only', { timeout: 120_000 },
  (t) => {
    if (!haveTool(NPM_CLI)) return skipOrFail(t, 'npm is not on PATH');
    const { report } = pack(t);
    assert.equal(report.name, 'osiris-mcp');
    assert.equal(report.version, packageVersion());
    assert.deepEqual(report.files.map((file) => file.path).sort(),
      ['LICENSE', 'README.md', 'bin/osiris-mcp.js', 'lib/launcher.js', 'package.json']);
    const bin = report.files.find((file) => file.path === 'bin/osiris-mcp.js');
    assert.ok(bin.mode & 0o111, 'the bin is packed without its executable bit');
  });

test('tools/list through the packed tarball and through npx on it', { timeout: 120_000 },
  async (t) => {
    if (!needPython(t)) return;
    if (!haveTool(NPM_CLI)) return skipOrFail(t, 'npm is not on PATH');
    if (!haveTool('tar')) return skipOrFail(t, 'tar is not on PATH');
    const { tarball } = pack(t);
    const unpacked = tempDir(t, 'osiris-mcp-unpacked-');
    const untar = spawnSync('tar', ['-xzf', tarball, '-C', unpacked], { encoding: 'utf8' });
    assert.equal(untar.status, 0, untar.stderr);
    const launcher = path.join(unpacked, 'package', 'bin', 'osiris-mcp.js');
    assert.ok(fs.existsSync(launcher));

    const fromTarball = await listToolsThroughLauncher(t, serverEnv(t, {
      OSIRIS_PYTHON: PYTHON,
    }), { launcher, cwd: unpacked });
    assert.deepEqual(EXPECTED_TOOLS.filter((name) => !fromTarball.tools.includes(name)), []);

    // What `npx -y osiris-mcp` does, with the tarball in place of the registry: npm
    // installs it into its cache and runs the bin through its shebang.
    const npxEnv = isolatedNpmEnv(t, serverEnv(t, { OSIRIS_PYTHON: PYTHON }));
    const throughNpx = await listToolsThroughLauncher(t, npxEnv, {
      command: [NPM_CLI, 'exec', '--package', tarball, '--', 'osiris-mcp'], cwd: unpacked,
    });
    assert.deepEqual(EXPECTED_TOOLS.filter((name) => !throughNpx.tools.includes(name)), []);
  });
