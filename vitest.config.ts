import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    // One module graph per worker, not per file: importing the service takes each file seconds,
    // which over a hundred files was half the suite's time. Every test builds its own runtime
    // (database, job queue, clock) and module state is limited to idempotent registrations.
    isolate: false,
    // Every core (Vitest's default leaves one idle, on a 2-core machine half of them): most files
    // wait on sockets, child processes and the database, so the suite fits CI's budget.
    maxWorkers: availableParallelism(),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
