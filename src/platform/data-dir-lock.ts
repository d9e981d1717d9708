import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * PGlite corrupts a data directory that two processes open, so one process holds it (contract §11).
 * The holder's pid is in `callforge.lock`; a lock left by a dead process is taken over.
 */
export class DataDirBusyError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function holdDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const lockPath = join(dir, 'callforge.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(lockPath, 'utf8').trim() === String(process.pid)) unlinkSync(lockPath);
        } catch {
          // Already gone.
        }
      };
      process.once('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(lockPath, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new DataDirBusyError(
        `The embedded database in ${resolve(dir)} is held by process ${holder}. Only one process may open it: stop that process first, ` +
          'or run every process against a PostgreSQL server by setting DATABASE_URL.',
      );
    }
    try {
      unlinkSync(lockPath); // stale: its process is gone
    } catch {
      // Another process took it over first; the next attempt sees its pid.
    }
  }
  throw new DataDirBusyError(`Could not take the lock ${lockPath}; another process keeps taking it.`);
}
