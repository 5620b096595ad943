// The npm package itself: version and licence equal the Python package's, and the
// manifest ships exactly the launcher.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { packageVersion } from '../lib/launcher.js';
import { NPM_DIR, REPO_DIR } from './support.mjs';

const manifest = JSON.parse(fs.readFileSync(path.join(NPM_DIR, 'package.json'), 'utf8'));

test('the version equals the Python package\'s (osiris/_version.py)', () => {
  const source = fs.readFileSync(path.join(REPO_DIR, 'osiris', '_version.py'), 'utf8');
  const match = /^__version__\s*=\s*["']([^"']+)["']/m.exec(source);
  assert.ok(match, 'osiris/_version.py has no __version__');
  assert.equal(manifest.version, match[1]);
  assert.equal(packageVersion(), match[1]);
});

test('LICENSE is a copy of the repository\'s, and its type is the declared one', () => {
  const repoLicence = fs.readFileSync(path.join(REPO_DIR, 'LICENSE'), 'utf8');
  assert.equal(fs.readFileSync(path.join(NPM_DIR, 'LICENSE'), 'utf8'), repoLicence);
  assert.equal(manifest.license, 'MIT');
  assert.match(repoLicence, /^MIT License\n/);
  const pyproject = fs.readFileSync(path.join(REPO_DIR, 'pyproject.toml'), 'utf8');
  assert.match(pyproject, /^license = "MIT"$/m);
});

test('the manifest: name, bin, files, engines, no dependencies', () => {
  assert.equal(manifest.name, 'osiris-mcp');
  assert.deepEqual(manifest.bin, { 'osiris-mcp': 'bin/osiris-mcp.js' });
  assert.deepEqual(manifest.files, ['bin/', 'lib/']);
  assert.equal(manifest.type, 'module');
  assert.match(manifest.engines.node, /^>=\d+/);
  for (const key of ['dependencies', 'optionalDependencies', 'peerDependencies',
    'bundleDependencies', 'devDependencies']) {
    assert.equal(manifest[key], undefined, key);
  }
  const bin = path.join(NPM_DIR, manifest.bin['osiris-mcp']);
  assert.match(fs.readFileSync(bin, 'utf8'), /^#!\/usr\/bin\/env node\n/);
  if (process.platform !== 'win32') {
    assert.ok(fs.statSync(bin).mode & 0o111, `${bin} is not executable`);
  }
});

test('the launcher imports nothing but Node built-ins', () => {
  for (const file of ['bin/osiris-mcp.js', 'lib/launcher.js']) {
    const source = fs.readFileSync(path.join(NPM_DIR, file), 'utf8');
    for (const [, specifier] of source.matchAll(/^import .* from '([^']+)';$/gm)) {
      assert.ok(specifier.startsWith('node:') || specifier.startsWith('../lib/'),
        `${file} imports ${specifier}`);
    }
  }
});
