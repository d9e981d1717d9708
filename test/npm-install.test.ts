import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// `npm ci` warning-free and offline: npm 11 denies onnxruntime-node's install script by
// allowScripts; npm 10 runs it, and the package's own variable makes it skip the CUDA download.
describe('installing', () => {
  it('gives npm no project setting it does not know (npm 11 warned about one on every command)', () => {
    const run = spawnSync('npm', ['config', 'list'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stderr).not.toMatch(/Unknown (project|env) config/);
  });

  it("skips onnxruntime-node's CUDA download with ONNXRUNTIME_NODE_INSTALL=skip, as npm 10 runs its script", () => {
    const script = createRequire(import.meta.url).resolve('onnxruntime-node/script/install.js');
    // No network is reachable from the script here: a download would fail, a skip exits at once.
    const run = spawnSync(process.execPath, [script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, ONNXRUNTIME_NODE_INSTALL: 'skip', GLOBAL_AGENT_HTTPS_PROXY: 'http://127.0.0.1:9' },
      timeout: 20_000,
    });
    expect(run.status).toBe(0);
    expect(run.stdout + run.stderr).toBe('');
  });
});
