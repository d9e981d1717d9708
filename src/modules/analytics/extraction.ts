import { DateTime } from 'luxon';
import { tenantCtx, type Deps } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { createChatCompletions } from '../../providers/openai-compatible/chat-completions.ts';
import type { StructuredExtractor } from '../../providers/types.ts';
import * as calls from '../calls/service.ts';
import * as repo from './repo.ts';
import type { BindingField } from './schemas.ts';

export const EXTRACT_ANALYTICS = 'analytics.extract';
export interface ExtractAnalyticsJob {
  tenantId: string;
  callId: string;
}

/** The JSON schema the model must answer with: every bound field, null when the call did not say. */
export function schemaOf(fields: BindingField[]): object {
  const property = (field: BindingField) => {
    const description = field.description ?? field.name;
    if (field.type === 'enum') return { type: ['string', 'null'], enum: [...field.enumValues!, null], description };
    if (field.type === 'date') return { type: ['string', 'null'], description: `${description} (ISO date, YYYY-MM-DD)` };
    return { type: [field.type, 'null'], description };
  };
  return {
    type: 'object',
    properties: Object.fromEntries(fields.map((field) => [field.name, property(field)])),
    required: fields.map((field) => field.name),
    additionalProperties: false,
  };
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

export function extractorOf(deps: Pick<Deps, 'config'>): StructuredExtractor | undefined {
  const { llm } = deps.config;
  return llm.apiUrl ? createChatCompletions({ baseUrl: llm.apiUrl, apiKey: llm.apiKey, model: llm.model }) : undefined;
}

/**
 * After a call: the agent's bound fields read from the transcript by the configured model, the
 * values checked against their types, stored once per call. Nothing happens without bindings, a
 * transcript or a configured model (LLM_API_URL).
 */
export async function extractAfterCall(deps: Deps, job: ExtractAnalyticsJob, extractor = extractorOf(deps)): Promise<boolean> {
  const ctx = tenantCtx(deps, job.tenantId);
  const call = await calls.findCallRow(ctx, job.callId);
  if (!extractor || !call?.agent_id || call.status !== 'ENDED') return false;
  const transcript = (call.transcript as { role: string; text: string }[]).filter((turn) => typeof turn?.text === 'string');
  const fields = (await repo.bindingsOf(ctx.db, ctx.tenantId, call.agent_id))?.fields ?? [];
  if (transcript.length === 0 || fields.length === 0) return false;
  // A repeated call.ended enqueues the job again; the model is asked once per call.
  if (await repo.hasResult(ctx.db, ctx.tenantId, call.id)) return false;
  const answer = await extractor.extract({
    system:
      'You read a phone call transcript and fill in the requested fields. Use null for anything the call did not establish. Dates are YYYY-MM-DD.',
    user: transcript.map((turn) => `${turn.role}: ${turn.text}`).join('\n'),
    schemaName: 'call_analytics',
    schema: schemaOf(fields),
  });
  return repo.insertResult(ctx.db, ctx.tenantId, {
    id: newId(),
    callId: call.id,
    agentId: call.agent_id,
    campaignId: call.campaign_id,
    contactId: call.contact_id,
    fields: validValues(fields, answer),
    extractedAt: ctx.clock.now(),
  });
}

export const extractAnalyticsJob = (deps: Deps): JobDefinition<ExtractAnalyticsJob> => ({
  name: EXTRACT_ANALYTICS,
  retryLimit: 5,
  retryDelaySeconds: 10,
  batchSize: 1, // a model call can take 30 s; a batch could outlive the job's expiry
  handle: async (data) => void (await extractAfterCall(deps, data)),
});
