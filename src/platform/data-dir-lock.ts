import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * PGlite corrupts a data directory that two processes open, so one process holds it (contract §11).
 * The holder's pid is in `callforge.lock`, with what it is on the next line (the server, a CLI
 * command) so that a refused process can say what to stop; a lock left by a dead process is taken over.
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

export function holdDataDir(dir: string, holder?: string): () => void {
  mkdirSync(dir, { recursive: true });
  const lockPath = join(dir, 'callforge.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, holder ? `${process.pid}\n${holder}` : String(process.pid));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(lockPath, 'utf8').split('\n')[0]!.trim() === String(process.pid)) unlinkSync(lockPath);
        } catch {
          // Already gone.
        }
      };
      process.once('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const [pidLine = '', what] = readFileSync(lockPath, 'utf8').split('\n');
    const pid = Number(pidLine.trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new DataDirBusyError(
        `The embedded database in ${resolve(dir)} is held by process ${pid}${what?.trim() ? ` (${what.trim()})` : ''}. ` +
          'Only one process may open it: stop that process first, or run every process against a PostgreSQL server by setting DATABASE_URL.',
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
