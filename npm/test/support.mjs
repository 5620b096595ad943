// Helpers for the launcher tests: fake runtimes, running the launcher, a tiny MCP client.
// (Not a test file: `node --test test/*.test.mjs` does not run it.)

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const NPM_DIR = fileURLToPath(new URL('..', import.meta.url));
export const REPO_DIR = path.dirname(NPM_DIR);
export const LAUNCHER = path.join(NPM_DIR, 'bin', 'osiris-mcp.js');
export const EXPECTED_TOOLS = ['osiris_plan', 'osiris_precheck', 'osiris_observe',
  'osiris_recall', 'osiris_checkpoint', 'osiris_handoff'];

/** A fresh temp directory, removed when the test `t` ends. */
export function tempDir(t, prefix = 'osiris-mcp-test-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A fake runtime is a Node script behind a shebang to this very node, so it needs nothing
// on PATH. Every run appends one JSON line to the record file: which fake ran, with what
// argv and environment. `python -c ...` is the launcher's import check: it succeeds iff
// `importable`; everything else is a "real" run that does `behaviour`.
const FAKE_SOURCE = `
const fs = require('node:fs');
const path = require('node:path');
const spec = SPEC_JSON;
const name = path.basename(process.argv[1]);
const argv = process.argv.slice(2);
const record = (extra) => fs.appendFileSync(spec.record, JSON.stringify(
  { name, argv, env: process.env, cwd: process.cwd(), ...extra }) + '\\n');
if (argv[0] === '-c') {
  record({ check: true });
  // A check that read the client's stdin would steal its first messages.
  if (spec.drainStdinOnCheck) fs.readFileSync(0);
  if (!spec.importable) {
    process.stderr.write("ModuleNotFoundError: No module named 'osiris'\\n");
    process.exit(1);
  }
  process.stdout.write('9.9.9-fake\\n');
  process.exit(0);
}
record({});
const behaviour = spec.behaviour ?? { exit: 0 };
if (behaviour.stdout) process.stdout.write(behaviour.stdout);
if ('exit' in behaviour) process.exit(behaviour.exit);
if (behaviour.killSelf) process.kill(process.pid, behaviour.killSelf);
if (behaviour.echoStdin) process.stdin.pipe(process.stdout);
if (behaviour.waitForSignal) {
  for (const [signal, code] of Object.entries(behaviour.waitForSignal)) {
    process.on(signal, () => { record({ received: signal }); process.exit(code); });
  }
  // Like a stdio server, end with stdin, so that a failed test leaves no process behind.
  process.stdin.on('end', () => process.exit(99)).resume();
  process.stdout.write('ready\\n');
}
`;

/**
 * Write fake runtimes into a new directory: `fakes` maps a name (uvx, python3, python) to
 * { importable = true, behaviour = { exit: 0 } }. Returns { dir, records() }.
 */
export function makeFakes(t, fakes) {
  const dir = tempDir(t, 'osiris-mcp-fakes-');
  const record = path.join(dir, 'records.jsonl');
  for (const [name, options] of Object.entries(fakes)) {
    const spec = { importable: true, behaviour: { exit: 0 }, ...options, record };
    const source = FAKE_SOURCE.replace('SPEC_JSON', () => JSON.stringify(spec));
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!${process.execPath}\n${source}`, { mode: 0o755 });
  }
  const records = () => (fs.existsSync(record)
    ? fs.readFileSync(record, 'utf8').trim().split('\n').map((line) => JSON.parse(line))
    : []);
  return { dir, records };
}

/** A minimal environment: only what is given, so nothing from the runner's env leaks in. */
export function launcherEnv(pathDirs, extra = {}) {
  return { PATH: pathDirs.join(path.delimiter), ...extra };
}

/** Run the launcher to completion: { code, signal, stdout, stderr }. */
export function runLauncher(args, env, { launcher = LAUNCHER, cwd, input } = {}) {
  const result = spawnSync(process.execPath, [launcher, ...args], {
    env, cwd, input, encoding: 'utf8', timeout: 30_000,
  });
  if (result.error) throw result.error;
  return { code: result.status, signal: result.signal, stdout: result.stdout,
    stderr: result.stderr };
}

/**
 * Start the launcher (or `command`, an argv to which `args` are appended) with piped
 * stdio; killed when the test ends if still running.
 */
export function startLauncher(t, args, env, { launcher = LAUNCHER, command, cwd } = {}) {
  const [file, ...prefix] = command ?? [process.execPath, launcher];
  const child = spawn(file, [...prefix, ...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderrText = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { child.stderrText += chunk; });
  child.exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  t.after(() => {
    child.stdin.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** Resolves with the first line of `stream` that equals `expected`. */
export async function waitForLine(stream, expected) {
  const lines = readline.createInterface({ input: stream });
  for await (const line of lines) {
    if (line === expected) return line;
  }
  throw new Error(`stream ended before the line ${JSON.stringify(expected)}`);
}

/**
 * A Python that has OSIRIS for the end-to-end tests: TEST_OSIRIS_PYTHON, else python3 from
 * PATH if it imports osiris (checked outside the repository, so the source tree in the cwd
 * does not count). Returns null when there is none.
 */
export function findOsirisPython() {
  const candidates = [process.env.TEST_OSIRIS_PYTHON, 'python3'].filter(Boolean);
  const neutral = fs.mkdtempSync(path.join(os.tmpdir(), 'osiris-mcp-probe-'));
  try {
    for (const python of candidates) {
      const probe = spawnSync(python, ['-c', 'import osiris.cli'], {
        cwd: neutral, stdio: 'ignore', timeout: 30_000,
      });
      if (probe.status === 0) return python;
      if (python === process.env.TEST_OSIRIS_PYTHON) {
        throw new Error(`TEST_OSIRIS_PYTHON=${python} cannot import osiris`);
      }
    }
    return null;
  } finally {
    fs.rmSync(neutral, { recursive: true, force: true });
  }
}

/** Skip `t` for a missing tool, or fail when TEST_REQUIRE_NODE_TOOLS=1 (CI). */
export function skipOrFail(t, reason) {
  if (process.env.TEST_REQUIRE_NODE_TOOLS === '1') {
    throw new Error(`${reason} (required: TEST_REQUIRE_NODE_TOOLS=1)`);
  }
  t.skip(reason);
}

/**
 * Speak MCP over a child's stdio by hand (newline-delimited JSON-RPC). Every stdout line
 * is kept in `lines`, so a test can check that nothing but JSON-RPC was written.
 */
export class StdioMcpClient {
  constructor(child) {
    this.child = child;
    this.lines = [];
    this.waiting = new Map();
    this.nextId = 1;
    const reader = readline.createInterface({ input: child.stdout });
    reader.on('line', (line) => {
      this.lines.push(line);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        return; // Recorded in `lines`; the test fails on it.
      }
      const pending = this.waiting.get(message.id);
      if (pending !== undefined && (message.result !== undefined || message.error)) {
        this.waiting.delete(message.id);
        pending(message);
      }
    });
    this.closed = once(reader, 'close');
  }

  send(message) {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  }

  /** Send a request and resolve with its response (rejects if stdout closes first). */
  request(method, params) {
    const id = this.nextId++;
    const response = new Promise((resolve, reject) => {
      this.waiting.set(id, resolve);
      this.closed.then(() => reject(new Error(
        `stdout closed before the response to ${method}; stderr:\n${this.child.stderrText}`)));
    });
    this.send(params === undefined ? { id, method } : { id, method, params });
    return response;
  }

  /** initialize + notifications/initialized, as a 2025-11-25 client. */
  async initialize() {
    const response = await this.request('initialize', {
      protocolVersion: '2025-11-25', capabilities: {},
      clientInfo: { name: 'osiris-mcp-launcher-test', version: '0' },
    });
    this.send({ method: 'notifications/initialized' });
    return response;
  }
}

/**
 * Initialize, list the tools, close stdin: the server must then exit 0 having written
 * nothing but JSON-RPC on stdout. Returns the tool names.
 */
export async function listToolsThroughLauncher(t, env, options = {}) {
  const child = startLauncher(t, [], env, options);
  const client = new StdioMcpClient(child);
  const init = await client.initialize();
  if (init.error) throw new Error(`initialize failed: ${JSON.stringify(init.error)}`);
  const listed = await client.request('tools/list');
  if (listed.error) throw new Error(`tools/list failed: ${JSON.stringify(listed.error)}`);
  child.stdin.end();
  const { code, signal } = await child.exited;
  await client.closed;
  for (const line of client.lines) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      throw new Error(`non-JSON line on stdout: ${JSON.stringify(line)}`);
    }
    if (message.jsonrpc !== '2.0') throw new Error(`not JSON-RPC on stdout: ${line}`);
  }
  if (code !== 0) {
    throw new Error(`launcher exited ${code ?? signal}; stderr:\n${child.stderrText}`);
  }
  return { init, tools: listed.result.tools.map((tool) => tool.name),
    stderr: child.stderrText };
}
