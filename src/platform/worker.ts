import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * A worker thread running a TypeScript file like the rest of the code (through tsx, no build
 * step): it registers tsx's loader itself, so it starts the same under `node --import tsx`, the
 * CLI and vitest. `resourceLimits` bounds its heap: past them the worker stops with an
 * `ERR_WORKER_OUT_OF_MEMORY` error and the process goes on.
 */
export function startTypeScriptWorker(script: URL, options: { resourceLimits?: ResourceLimits } = {}): Worker {
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); });`, {
    eval: true,
    resourceLimits: options.resourceLimits,
  });
}
