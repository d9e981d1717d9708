import type { JobDefinition } from './platform/jobs.ts';

/** Every module's background jobs, run by the worker role. */
export const jobDefinitions: JobDefinition<never>[] = [];
