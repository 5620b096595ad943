// Signals sent to the launcher reach the server; a server killed by a signal takes the
// launcher down with the same signal. The fake server says "ready" on stdout once its
// handlers are in place, so nothing here waits on a clock.

import assert from 'node:assert/strict';
import test from 'node:test';

import { launcherEnv, makeFakes, runLauncher, startLauncher, waitForLine } from './support.mjs';

const skip = process.platform === 'win32' ? 'POSIX signals' : false;
const EXIT_ON = { SIGINT: 30, SIGTERM: 31, SIGHUP: 32 };

for (const signal of Object.keys(EXIT_ON)) {
  test(`${signal} to the launcher reaches the server`, { skip }, async (t) => {
    const fakes = makeFakes(t, { uvx: { behaviour: { waitForSignal: EXIT_ON } } });
    const launcher = startLauncher(t, [], launcherEnv([fakes.dir]));
    await waitForLine(launcher.stdout, 'ready');
    launcher.kill(signal);
    // The server handled it and chose its exit code; the launcher passes that on.
    assert.deepEqual(await launcher.exited, { code: EXIT_ON[signal], signal: null });
    const received = fakes.records().filter((entry) => entry.received);
    assert.deepEqual(received.map((entry) => entry.received), [signal]);
    assert.equal(launcher.stderrText, '');
  });
}

for (const signal of ['SIGTERM', 'SIGHUP', 'SIGKILL']) {
  test(`a server killed by ${signal} takes the launcher down with it`, { skip }, (t) => {
    const fakes = makeFakes(t, { python3: { behaviour: { killSelf: signal } } });
    const result = runLauncher([], launcherEnv([fakes.dir]));
    assert.equal(result.signal, signal);
    assert.equal(result.code, null);
  });
}
