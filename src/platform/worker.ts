import { Worker } from 'node:worker_threads';

/**
 * A worker thread running a TypeScript file like the rest of the code (through tsx, no build
 * step): it registers tsx's loader itself, so it starts the same under `node --import tsx`, the
 * CLI and vitest.
 */
export function startTypeScriptWorker(script: URL): Worker {
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); });`, {
    eval: true,
  });
}
