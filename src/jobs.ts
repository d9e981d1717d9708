import type { JobDefinition } from './platform/jobs.ts';
import { callEndedJob } from './modules/calls/service.ts';

/** Every module's background jobs, run by the worker role. */
export const jobDefinitions: JobDefinition<never>[] = [callEndedJob as JobDefinition<never>];
