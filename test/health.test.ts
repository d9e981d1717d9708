import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerHealth } from '../src/platform/health.ts';
import { startTestApp, type TestApp } from './harness.ts';

// The worker role's probes (WORKER_HEALTH_PORT) and the API's answer alike: /healthz while the
// process runs, /readyz once the database answers and the job queue is started.
let t: TestApp;
let health: Awaited<ReturnType<typeof startWorkerHealth>>;

beforeAll(async () => {
  t = await startTestApp();
  health = await startWorkerHealth(t.runtime, { port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await health.close();
  await t.close();
});

const probe = async (path: string) => {
  const response = await fetch(`${health.url}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('worker health endpoint', () => {
  it('answers /healthz and /readyz with 200 while the database answers and the job queue runs', async () => {
    expect(await probe('/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await probe('/readyz')).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('answers anything else with 404', async () => {
    expect((await probe('/api/v1/profile')).status).toBe(404);
  });

  it('answers /readyz with 503 JOB_QUEUE_UNAVAILABLE once the job queue has stopped, in the worker and the API alike, while /healthz stays 200', async () => {
    await t.runtime.jobs.stop();
    const worker = await probe('/readyz');
    expect(worker.status).toBe(503);
    expect(worker.body).toMatchObject({
      code: 'JOB_QUEUE_UNAVAILABLE',
      message: 'The job queue is not started; this process cannot take background work yet.',
    });
    const api = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(api.statusCode).toBe(503);
    expect(api.json()).toMatchObject({ code: 'JOB_QUEUE_UNAVAILABLE' });
    expect((await probe('/healthz')).status).toBe(200);
  });
});
