import { processSource } from '../src/modules/knowledge/service.ts';
import { until, type TestApp } from './harness.ts';
import { apiAs, newTenant, uniqueNumber } from './voice-fixtures.ts';

// What the test suites' tests share: a tenant, the clinic's retrieval agent, a run awaited.

export type Api = ReturnType<typeof apiAs>;

export const FACTS =
  'Opening hours. The clinic opens at 8 am and closes at 6 pm on weekdays. Parking. Parking is free in the blue garage behind the building.';

/** An agent answering from a knowledge base of `FACTS` (processed as its job would). */
export async function retrievalAgent(t: TestApp, api: Api, tenantId: string, extra: Record<string, unknown> = {}) {
  const base = (await api('POST', '/knowledge-bases', { name: `KB ${uniqueNumber()}` })).json();
  const source = (
    await api('POST', `/knowledge-bases/${base.id}/sources`, { sourceType: 'text', sourceName: 'facts', rawText: FACTS })
  ).json();
  await processSource(t.runtime, { tenantId, sourceId: source.id, generation: 1 }, { retryCount: 0 });
  return (await api('POST', '/agents', { name: 'Clinic desk', knowledgeBaseIds: [base.id], ...extra })).json();
}

/** A new tenant, its API and its id. */
export async function suiteTenant(t: TestApp) {
  const created = await newTenant(t.app);
  const tenantId = (await created.api('GET', '/profile')).json().data.tenant.id as string;
  return { ...created, tenantId };
}

/** The run once it has finished, PASSED or FAILED. */
export const finishedRun = (api: Api, runId: string, timeoutMs = 60_000) =>
  until(
    `run ${runId} to finish`,
    async () => {
      const run = (await api('GET', `/test-suite-runs/${runId}`)).json();
      return ['PASSED', 'FAILED'].includes(run.status) && run;
    },
    timeoutMs,
  );
