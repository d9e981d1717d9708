import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataDirBusyError, holdDataDir } from './data-dir-lock.ts';

describe('embedded data directory lock (contract §11)', () => {
  it('refuses a directory held by a live process, naming its pid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'callforge-lock-'));
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(join(dir, 'callforge.lock'), String(holder.pid));
      expect(() => holdDataDir(dir)).toThrow(DataDirBusyError);
      expect(() => holdDataDir(dir)).toThrow(`held by process ${holder.pid}`);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over a stale lock left by a dead process, and releases its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'callforge-lock-'));
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(join(dir, 'callforge.lock'), String(dead.pid));
    const release = holdDataDir(dir);
    expect(readFileSync(join(dir, 'callforge.lock'), 'utf8')).toBe(String(process.pid));
    release();
    expect(existsSync(join(dir, 'callforge.lock'))).toBe(false);
  });
});
