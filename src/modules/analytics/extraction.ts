import { DateTime } from 'luxon';
import { oncePer, perTurn } from '../../platform/batches.ts';
import { tenantCtx, type Deps } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as repo from './repo.ts';
import type { BindingField } from './schemas.ts';

export const EXTRACT_ANALYTICS = 'analytics.extract';
export interface ExtractAnalyticsJob {
  tenantId: string;
  callId: string;
}

/** The JSON schema the model must answer with: a summary, and every bound field (null when the call did not say). */
export function schemaOf(fields: BindingField[]): object {
  const property = (field: BindingField) => {
    const description = field.description ?? field.name;
    if (field.type === 'enum') return { type: ['string', 'null'], enum: [...field.enumValues!, null], description };
    if (field.type === 'date') return { type: ['string', 'null'], description: `${description} (ISO date, YYYY-MM-DD)` };
    return { type: [field.type, 'null'], description };
  };
  return {
    type: 'object',
    properties: {
      summary: { type: 'string', description: 'What happened on the call, in two or three sentences.' },
      fields: {
        type: 'object',
        properties: Object.fromEntries(fields.map((field) => [field.name, property(field)])),
        required: fields.map((field) => field.name),
        additionalProperties: false,
      },
    },
    required: ['summary', 'fields'],
    additionalProperties: false,
  };
}

/**
 * What a call came to, read from what happened (its outcome, why it ended, what its tools
 * recorded), never from a model: it is there for every call, model or not.
 */
export function conversationOutcome(call: Pick<calls.CallRow, 'outcome' | 'end_reason' | 'outcomes'>): string {
  if (call.outcome !== 'ANSWERED') return (call.outcome ?? 'failed').toLowerCase();
  if (call.end_reason === 'llm_error' || call.end_reason === 'opted_out' || call.end_reason === 'transferred') return call.end_reason;
  const recorded = new Set((call.outcomes as { type?: string }[]).map((outcome) => outcome?.type));
  if (recorded.has('appointment')) return 'appointment_booked';
  if (recorded.has('payment_promise')) return 'payment_promised';
  return 'completed';
}

/** Keeps the values that have their field's type; a wrong type is dropped, never stored. */
export function validValues(fields: BindingField[], answer: Record<string, unknown>): Record<string, unknown> {
  const ok = (field: BindingField, value: unknown): boolean => {
    switch (field.type) {
      case 'string':
        return typeof value === 'string';
      case 'number':
        return typeof value === 'number' && Number.isFinite(value);
      case 'boolean':
        return typeof value === 'boolean';
      case 'enum':
        return typeof value === 'string' && field.enumValues!.includes(value);
      case 'date':
        return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && DateTime.fromISO(value).isValid;
      default:
        return false;
    }
  };
  return Object.fromEntries(
    fields.filter((field) => answer[field.name] !== null && ok(field, answer[field.name])).map((field) => [field.name, answer[field.name]]),
  );
}

/**
 * The statements every extraction makes, shared by the extractions running at once (a fetched
 * batch starts together): one read of the calls' results, of their agents and of each agent's
 * model connection, and one insert of the results, per turn and tenant (the calls' own read is the
 * calls module's, shared with messaging).
 */
type Agent = NonNullable<Awaited<ReturnType<typeof agents.findAgents>>[number]>;

function sharedStatements(deps: Deps) {
  const { db } = deps;
  return {
    recorded: perTurn(async (tenantId, callIds: string[]) => {
      const recorded = await repo.callsWithResults(db, tenantId, callIds);
      return callIds.map((callId) => recorded.has(callId));
    }),
    agent: perTurn((tenantId, agentIds: string[]) => agents.findAgents({ db, tenantId }, agentIds)),
    model: perTurn(async (tenantId, ofAgents: Agent[]) => {
      const ctx = tenantCtx(deps, tenantId);
      const models = new Map<string, Awaited<ReturnType<typeof agents.languageModelOf>>>();
      for (const agent of ofAgents) if (!models.has(agent.id)) models.set(agent.id, await agents.languageModelOf(deps, ctx, agent));
      return ofAgents.map((agent) => models.get(agent.id)!);
    }),
    record: perTurn(async (tenantId, results: repo.NewResult[]) => {
      const stored = await repo.insertResults(db, tenantId, results);
      return results.map((result) => stored.has(result.callId));
    }),
  };
}
const statementsOf = oncePer(sharedStatements);
/** The calls whose extraction runs in this process now. */
const runningOf = oncePer((_deps: Deps) => new Set<string>());

/** Attempts of the job; the last one records the failure rather than leave the call without a record. */
const EXTRACT_RETRY_LIMIT = 5;

/**
 * After a call: one analytics record, always. Where the agent has a model (the tenant's own server,
 * else the service's LLM_API_URL: the one it converses with) and the call had a conversation, the
 * model reads the transcript for a summary and the agent's bound fields (values checked against
 * their types); otherwise the record says why it is empty. Stored once per call; the model is asked
 * once per call.
 */
export async function extractAfterCall(
  deps: Deps,
  job: ExtractAnalyticsJob,
  meta: { retryCount: number } = { retryCount: 0 },
): Promise<boolean> {
  // A repeated call.ended enqueues the job again; the model is asked once per call (here, a
  // second job of a call running in this process meanwhile leaves it to the first).
  const running = runningOf(deps);
  const key = `${job.tenantId}:${job.callId}`;
  if (running.has(key)) return false;
  running.add(key);
  try {
    return (await extract(deps, job, meta, true)) === true;
  } finally {
    running.delete(key);
  }
}

/**
 * The record of a call that needs no model (no agent, no model, no conversation: most calls of a
 * campaign), written at once by the call's call.ended job. True when the call needs the model:
 * its extraction then gets a job of its own (EXTRACT_ANALYTICS), so that a model's retries and
 * messaging's never repeat each other.
 */
export async function recordUnlessModelNeeded(deps: Deps, job: ExtractAnalyticsJob): Promise<boolean> {
  return (await extract(deps, job, { retryCount: 0 }, false)) === NEEDS_MODEL;
}

const NEEDS_MODEL = 'needs model';

async function extract(
  deps: Deps,
  job: ExtractAnalyticsJob,
  meta: { retryCount: number },
  askModel: boolean,
): Promise<boolean | typeof NEEDS_MODEL> {
  const ctx = tenantCtx(deps, job.tenantId);
  const statements = statementsOf(deps);
  const call = await calls.endedCallRow(deps)(ctx.tenantId, job.callId);
  if (!call || call.status !== 'ENDED') return false;
  if (await statements.recorded(ctx.tenantId, call.id)) return false;
  const record = (status: string, summary: string | null = null, fields: Record<string, unknown> = {}) =>
    statements.record(ctx.tenantId, {
      id: newId(),
      callId: call.id,
      agentId: call.agent_id,
      agentVersion: call.agent_version ?? null,
      campaignId: call.campaign_id,
      contactId: call.contact_id,
      fields,
      status,
      summary,
      outcome: conversationOutcome(call),
      extractedAt: ctx.clock.now(),
    });
  const transcript = (call.transcript as { role: string; text: string }[]).filter(
    (turn) => typeof turn?.text === 'string' && (turn.role === 'agent' || turn.role === 'contact'),
  );
  const agent = call.agent_id ? await statements.agent(ctx.tenantId, call.agent_id) : undefined;
  if (!agent) return record('skipped: no agent');
  const model = await statements.model(ctx.tenantId, agent);
  if (!model) return record('skipped: no model configured');
  if (!transcript.some((turn) => turn.role === 'contact')) return record('skipped: no conversation');
  if (!askModel) return NEEDS_MODEL;
  const fields = (await repo.bindingsOf(ctx.db, ctx.tenantId, agent.id))?.fields ?? [];
  let extracted: Extracted;
  try {
    extracted = await extractFields(model, transcript, fields);
  } catch (error) {
    if (meta.retryCount < EXTRACT_RETRY_LIMIT) throw error; // retried with backoff
    return record(`failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return record('extracted', extracted.summary, extracted.values);
}

export interface Extracted {
  summary: string | null;
  /** The fields the transcript established, each of its field's type (a wrong type is dropped). */
  values: Record<string, unknown>;
  usage: { inputTokens: number; outputTokens: number } | null;
}

/**
 * The model reads a transcript for a summary and the bound fields: what analytics stores after a
 * call, and what a test suite's field assertions compare. A model's failure is thrown.
 */
export async function extractFields(
  model: Pick<agents.LanguageModel, 'chat' | 'name'>,
  transcript: { role: string; text: string }[],
  fields: BindingField[],
): Promise<Extracted> {
  const { answer, usage } = await model.chat.extract({
    model: model.name,
    system:
      'You read a phone call transcript, summarise it and fill in the requested fields. Use null for anything the call did not establish. Dates are YYYY-MM-DD.',
    user: transcript.map((turn) => `${turn.role}: ${turn.text}`).join('\n'),
    schemaName: 'call_analytics',
    schema: schemaOf(fields),
  });
  const summary = typeof answer.summary === 'string' ? answer.summary : null;
  const values = answer.fields !== null && typeof answer.fields === 'object' ? (answer.fields as Record<string, unknown>) : {};
  return { summary, values: validValues(fields, values), usage };
}

export const extractAnalyticsJob = (deps: Deps): JobDefinition<ExtractAnalyticsJob> => ({
  name: EXTRACT_ANALYTICS,
  retryLimit: EXTRACT_RETRY_LIMIT,
  retryDelaySeconds: 10,
  // A fetched batch's calls are read, asked about and recorded at once (their statements shared):
  // a batch lasts as long as its slowest model call (LLM_TIMEOUT_MS), far inside its expiry, and
  // asks a tenant's model server at most 20 questions at a time per worker.
  batchSize: 20,
  parallel: true,
  handle: async (data, meta) => void (await extractAfterCall(deps, data, meta)),
});
