// The `osiris-mcp` launcher: find a Python runtime that has OSIRIS and run its MCP server.
//
// Resolution order (the first that applies wins):
//   1. OSIRIS_PYTHON: that interpreter, which must import osiris (else an error, no fallback)
//   2. uvx on PATH:   uvx --from mcp-osiris==<this version> mcp-osiris | osiris ARGS
//   3. python3, 4. python on PATH: the first that imports osiris; python -m osiris ARGS
// The launcher itself never writes to stdout: stdout belongs to JSON-RPC.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const PYPI_PACKAGE = 'mcp-osiris';
/** Exit code when no usable runtime is found (the shell's "command not found"). */
export const EXIT_NOT_FOUND = 127;
/** Exit code when the chosen runtime exists but cannot be started (the shell's 126). */
export const EXIT_CANNOT_RUN = 126;

const PREFIX = 'osiris-mcp:';
const INSTALL_HINT =
  `install it with \`pip install ${PYPI_PACKAGE}\` (or install uv so that \`uvx\` can ` +
  'fetch it), or set OSIRIS_PYTHON to a Python that has it.';
// Imports the module `python -m osiris` runs, so a half-installed package (or an unrelated
// package that happens to be called osiris) fails here rather than after the client
// connected; prints the version for OSIRIS_LAUNCHER_DEBUG.
const IMPORT_CHECK = 'import osiris, osiris.cli; print(osiris.__version__)';
const IMPORT_CHECK_TIMEOUT_MS = 30_000;
const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
// Re-raising these on ourselves would not end the launcher (Node starts its inspector on
// SIGUSR1); exiting with 128 + the signal number says the same thing to a shell.
const NOT_RERAISED = new Set(['SIGUSR1']);

/** The version of this package, which equals the Python package's. */
export function packageVersion() {
  const manifest = new URL('../package.json', import.meta.url);
  return JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
}

function writeStderr(text) {
  // fs.writeSync rather than process.stderr: creating the stream could switch the fd,
  // which the child shares, to non-blocking mode.
  try {
    fs.writeSync(2, text.endsWith('\n') ? text : `${text}\n`);
  } catch {
    // Nowhere left to report to; the exit code still tells.
  }
}

function isExecutableFile(file, platform) {
  try {
    if (!fs.statSync(file).isFile()) return false;
    if (platform !== 'win32') fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function pathEntries(env, platform) {
  // Windows spells the variable Path; an empty entry would mean the current directory,
  // which is never searched (a stray ./python3 in a project must not be run).
  const key = platform === 'win32'
    ? Object.keys(env).find((name) => name.toUpperCase() === 'PATH') : 'PATH';
  const value = key === undefined ? '' : env[key] ?? '';
  return value.split(platform === 'win32' ? ';' : ':').filter((entry) => entry !== '');
}

/**
 * The absolute path of the executable `name` on PATH, or null. On Windows only `.exe`
 * and `.com` files count: `.cmd`/`.bat` shims cannot be spawned without a shell.
 */
export function findOnPath(name, env = process.env, platform = process.platform) {
  const suffixes = platform === 'win32' ? ['.exe', '.com'] : [''];
  for (const dir of pathEntries(env, platform)) {
    for (const suffix of suffixes) {
      const candidate = path.resolve(dir, name + suffix);
      if (isExecutableFile(candidate, platform)) return candidate;
    }
  }
  return null;
}

/** A command given by the user: a path (relative to the cwd) or a name looked up on PATH. */
export function resolveCommand(command, env = process.env, platform = process.platform) {
  const separators = platform === 'win32' ? /[\\/]/ : /\//;
  if (separators.test(command)) {
    const file = path.resolve(command);
    if (isExecutableFile(file, platform)) return file;
    if (platform === 'win32' && !path.extname(file) && isExecutableFile(`${file}.exe`, platform)) {
      return `${file}.exe`;
    }
    return null;
  }
  return findOnPath(command, env, platform);
}

/** Whether `python` imports osiris: { ok, version } or { ok: false, reason }. */
export function checkOsiris(python, env = process.env) {
  // stdin is ignored: it belongs to the MCP client and must reach the server untouched.
  const result = spawnSync(python, ['-c', IMPORT_CHECK], {
    env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8',
    timeout: IMPORT_CHECK_TIMEOUT_MS, windowsHide: true,
  });
  if (result.error) return { ok: false, reason: result.error.message };
  if (result.status === 0) return { ok: true, version: result.stdout.trim() };
  // The last line of a traceback names the problem (ModuleNotFoundError: ...).
  const lines = (result.stderr ?? '').trim().split('\n');
  const last = lines[lines.length - 1].trim().slice(0, 200);
  return { ok: false, reason: last || `exit status ${result.status ?? result.signal}` };
}

/**
 * How to run OSIRIS with `args`: { command, args, label, version? } or { error } (a message
 * for stderr). `log` receives the steps when OSIRIS_LAUNCHER_DEBUG is set.
 */
export function resolveRuntime(args, env = process.env, { platform = process.platform,
  version = packageVersion(), log = () => {} } = {}) {
  const explicit = env.OSIRIS_PYTHON;
  if (explicit) {
    // The user chose this interpreter: use it or say why not, never silently another.
    const python = resolveCommand(explicit, env, platform);
    if (python === null) {
      return { error: `${PREFIX} OSIRIS_PYTHON=${explicit} is not an executable file or a ` +
        `command on PATH.\n${PREFIX} point it at a Python that has ${PYPI_PACKAGE}, or ` +
        'unset it to let the launcher search.' };
    }
    const check = checkOsiris(python, env);
    if (!check.ok) {
      return { error: `${PREFIX} OSIRIS_PYTHON=${explicit} (${python}) cannot import ` +
        `osiris: ${check.reason}\n${PREFIX} install it there with \`${python} -m pip ` +
        `install ${PYPI_PACKAGE}\`, or unset OSIRIS_PYTHON to let the launcher search.` };
    }
    return { command: python, args: ['-m', 'osiris', ...args], label: 'OSIRIS_PYTHON',
      version: check.version };
  }
  const tried = ['OSIRIS_PYTHON unset'];

  const uvx = findOnPath('uvx', env, platform);
  if (uvx !== null) {
    // `python -m osiris` serves stdio without arguments and is the `osiris` CLI with them;
    // the two console scripts of the PyPI package split the same way. The version is
    // pinned so that osiris-mcp@X runs mcp-osiris X, not whatever uv cached last.
    const from = ['--from', `${PYPI_PACKAGE}==${version}`];
    const script = args.length === 0 ? [PYPI_PACKAGE] : ['osiris', ...args];
    return { command: uvx, args: [...from, ...script], label: 'uvx' };
  }
  tried.push('uvx not on PATH');

  for (const name of ['python3', 'python']) {
    const python = findOnPath(name, env, platform);
    if (python === null) {
      tried.push(`${name} not on PATH`);
      continue;
    }
    const check = checkOsiris(python, env);
    if (check.ok) {
      return { command: python, args: ['-m', 'osiris', ...args], label: name,
        version: check.version };
    }
    log(`${name} (${python}) cannot import osiris: ${check.reason}`);
    tried.push(`${name} (${python}) cannot import osiris`);
  }
  return { error: `${PREFIX} no Python runtime with OSIRIS found (${tried.join('; ')}).\n` +
    `${PREFIX} ${INSTALL_HINT}` };
}

/**
 * Run `command args` with our stdin, stdout, stderr and environment, forward SIGINT,
 * SIGTERM and SIGHUP to it, and end this process the way the child ended.
 */
export function runChild(command, args, env = process.env) {
  const child = spawn(command, args, { stdio: 'inherit', env, windowsHide: false });
  // Installed in the same tick as the spawn, so no signal can fall between the two.
  const handlers = new Map();
  for (const signal of FORWARDED_SIGNALS) {
    const forward = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    handlers.set(signal, forward);
    process.on(signal, forward);
  }
  const removeHandlers = () => {
    for (const [signal, forward] of handlers) process.removeListener(signal, forward);
  };
  child.on('error', (error) => {
    removeHandlers();
    writeStderr(`${PREFIX} cannot run ${command}: ${error.message}`);
    process.exit(error.code === 'ENOENT' ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  });
  child.on('exit', (code, signal) => {
    removeHandlers();
    if (signal === null) process.exit(code ?? 1);
    // Die of the same signal, so that our parent sees what really happened. When the
    // signal does not end us (ignored, like SIGPIPE, or NOT_RERAISED), exit 128 + n.
    process.exitCode = 128 + (os.constants.signals[signal] ?? 0);
    if (!NOT_RERAISED.has(signal)) {
      try {
        process.kill(process.pid, signal);
      } catch {
        // Unknown to this platform (Windows): the exit code above stands.
      }
    }
    setImmediate(() => process.exit());
  });
  return child;
}

/** The `osiris-mcp` command: resolve a runtime, then run the MCP server (or CLI) in it. */
export function main(args = process.argv.slice(2), env = process.env) {
  const debug = Boolean(env.OSIRIS_LAUNCHER_DEBUG) && env.OSIRIS_LAUNCHER_DEBUG !== '0';
  const log = debug ? (line) => writeStderr(`${PREFIX} ${line}`) : () => {};
  const runtime = resolveRuntime(args, env, { log });
  if (runtime.error) {
    writeStderr(runtime.error);
    process.exit(EXIT_NOT_FOUND);
  }
  const found = runtime.version ? ` with osiris ${runtime.version}` : '';
  log(`using ${runtime.label}${found}: ${[runtime.command, ...runtime.args].join(' ')}`);
  return runChild(runtime.command, runtime.args, env);
}
