import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A worker thread running a TypeScript file like the rest of the code (through tsx, no build
 * step): it registers tsx's loader itself, so it starts the same under `node --import tsx`, the
 * CLI and vitest.
 */
export function startTypeScriptWorker(script: URL, workerData?: unknown): Worker {
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); });`, {
    eval: true,
    workerData,
  });
}

/**
 * A child process running a TypeScript file through tsx, talking over IPC with structured clone
 * (Buffers and typed arrays cross as they are). Unlike a worker thread's heap limit, which V8
 * enforces only on a best-effort basis (an allocation past it can abort the whole process), a
 * child's `--max-old-space-size` bounds a process of its own: running out of memory ends only the
 * child, and its stderr, kept here, says so.
 */
export function forkTypeScript(script: URL, options: { maxOldSpaceMb: number }): { child: ChildProcess; stderr: () => string } {
  const child = fork(fileURLToPath(script), [], {
    execArgv: ['--import', import.meta.resolve('tsx'), `--max-old-space-size=${options.maxOldSpaceMb}`],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  // The last few kilobytes are enough to tell why it ended.
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-8192)));
  return { child, stderr: () => stderr };
}
