import { perTurnWrite } from './platform/batches.ts';
import type { Deps } from './platform/context.ts';
import type { JobDefinition } from './platform/jobs.ts';
import { CALL_ENDED, endedCallLine, type CallEndedJob } from './modules/calls/service.ts';
import {
  EXTRACT_ANALYTICS,
  extractAnalyticsJob,
  recordUnlessModelNeeded,
  type ExtractAnalyticsJob,
} from './modules/analytics/extraction.ts';
import { deliverWebhookJob } from './modules/events/service.ts';
import { afterCallEnded, sendMessageJob } from './modules/messaging/dispatch.ts';
import { confirmOptOutJob } from './modules/messaging/opt-out-confirmations.ts';
import { processSourceJobDefinition } from './modules/knowledge/service.ts';
import { converseOnSimulatedCallJob } from './modules/conversation/service.ts';
import { purgeRecordingsJob } from './modules/calls/recordings.ts';
import { runTestSuiteJob } from './modules/suites/service.ts';
import { scoreEndedCall } from './modules/suites/scorecards.ts';
import { tenantCtx } from './platform/context.ts';
import { rehearseCampaignJob } from './modules/rehearsals/service.ts';

/** Every module's background jobs, run by the worker role; `call.ended` is where they follow a call. */
export function jobDefinitions(deps: Deps): JobDefinition<never>[] {
  const extractAnalytics = perTurnWrite((_tenantId, jobs: ExtractAnalyticsJob[]) =>
    deps.jobs.sendMany(jobs.map((data) => ({ name: EXTRACT_ANALYTICS, data }))),
  );
  const callEnded: JobDefinition<CallEndedJob> = {
    name: CALL_ENDED,
    retryLimit: 10,
    // A fetched batch's calls are followed up at once, so their reads and writes share statements
    // (messaging's dispatch); each job still fails and retries on its own.
    batchSize: 50,
    parallel: true,
    concurrency: 2,
    async handle(data) {
      // Messaging, analytics and the scorecard follow the call at once, so they share its read (and the batch's).
      // A call that needs no model is recorded here; one that does gets its own queue, so a model's
      // retries and messaging's never repeat each other. A repeated call.ended enqueues it again,
      // and the job itself records once per call; messages are made once per call and channel.
      // Both end before the job does, whichever fails: nothing of it runs on after a stop.
      // The tenant's scorecard judges the call beside them (once per call, like the record).
      const [messaged, recorded, scored] = await Promise.allSettled([
        afterCallEnded(deps, data),
        recordUnlessModelNeeded(deps, data),
        scoreEndedCall(deps, tenantCtx(deps, data.tenantId), data),
      ]);
      if (messaged.status === 'rejected') throw messaged.reason;
      if (recorded.status === 'rejected') throw recorded.reason;
      if (scored.status === 'rejected') throw scored.reason;
      if (recorded.value) await extractAnalytics(data.tenantId, data);
      // The operator's terminal says what the service did: one line per call, once it is followed up.
      deps.log.info({ tenantId: data.tenantId, callId: data.callId }, endedCallLine(data));
    },
  };
  return [
    callEnded,
    sendMessageJob(deps),
    confirmOptOutJob(deps),
    deliverWebhookJob(deps),
    extractAnalyticsJob(deps),
    processSourceJobDefinition(deps),
    converseOnSimulatedCallJob(deps),
    purgeRecordingsJob(deps),
    runTestSuiteJob(deps),
    rehearseCampaignJob(deps),
  ] as JobDefinition<never>[];
}
