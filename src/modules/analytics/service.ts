import { DateTime } from 'luxon';
import type { TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { isUuid } from '../../platform/ids.ts';
import { formatMoney, money, type Money } from '../../platform/money.ts';
import type { Page } from '../../platform/pagination.ts';
import { dayEnd, dayStart } from '../../platform/schemas.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as campaigns from '../campaigns/service.ts';
import * as identity from '../identity/service.ts';
import * as repo from './repo.ts';
import type {
  Bindings,
  Detail,
  DetailQuery,
  Latency,
  LatencyQuery,
  PutBindingsBody,
  ResultsQuery,
  Totals,
  Trends,
  TrendsQuery,
} from './schemas.ts';

/** What a test suite's field assertions use: the model reading a transcript as analytics does after a call. */
export { extractFields, type Extracted } from './extraction.ts';
export type { BindingField } from './schemas.ts';

const DEFAULT_DAYS = 30;
const MAX_BUCKETS = 5000;

function rangeOf(ctx: TenantCtx, query: { from?: string; to?: string; agentId?: string }) {
  const to = query.to ? dayEnd(query.to) : ctx.clock.now();
  const from = query.from ? dayStart(query.from) : new Date(to.getTime() - DEFAULT_DAYS * 86_400_000);
  for (const [name, date] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (Number.isNaN(date.getTime()))
      throw appError('VALIDATION_FAILED.notAnInstant', { name }, [{ path: `/${name}`, message: 'not a real instant' }]);
  }
  if (from > to) throw appError('VALIDATION_FAILED.fromAfterTo', {}, [{ path: '/from', message: 'after to' }]);
  return { from, to, agentId: query.agentId };
}

const minutesOf = (seconds: number) => Math.round((seconds / 60) * 100) / 100;

function totalsOf(rows: Pick<calls.CallUsageRow, 'stt' | 'tts' | 'llm' | 'telephony' | 'platform_fee' | 'total'>[]): Totals {
  const sum = (pick: (row: (typeof rows)[number]) => string) =>
    formatMoney(rows.reduce<Money>((acc, row) => acc.add(money(pick(row))), money(0)));
  return {
    stt: sum((r) => r.stt),
    tts: sum((r) => r.tts),
    llm: sum((r) => r.llm),
    telephony: sum((r) => r.telephony),
    platformFee: sum((r) => r.platform_fee),
    total: sum((r) => r.total),
  };
}

/** Contract §8: usage and cost per component of the calls that ended in the range, by agent. */
export async function myDetail(ctx: TenantCtx, query: DetailQuery): Promise<Detail> {
  const range = rangeOf(ctx, query);
  const [rows, wallet] = await Promise.all([calls.usageByAgent(ctx, range), identity.walletBalance(ctx)]);
  const head = { from: range.from.toISOString(), to: range.to.toISOString(), currency: wallet.currency, totals: totalsOf(rows) };
  if (query.summary) return head;
  const names = await agents.agentNames(
    ctx,
    rows.flatMap((row) => (row.agent_id ? [row.agent_id] : [])),
  );
  return {
    ...head,
    calls: rows.reduce((n, row) => n + row.calls, 0),
    minutes: minutesOf(rows.reduce((n, row) => n + row.seconds, 0)),
    byAgent: rows.map((row) => ({
      agentId: row.agent_id,
      agentName: (row.agent_id && names.get(row.agent_id)) ?? null,
      calls: row.calls,
      minutes: minutesOf(row.seconds),
      totals: totalsOf([row]),
    })),
  };
}

/**
 * Contract §8: calls, answered calls, minutes and spend per day (or hour) in the tenant's time
 * zone, every bucket of the range listed (empty ones as zeros). A bucket is named by the instant
 * its local day or hour starts, so a day of a daylight-saving change is 23 or 25 hours long.
 */
export async function myTrends(ctx: TenantCtx, query: TrendsQuery): Promise<Trends> {
  const range = rangeOf(ctx, query);
  const interval: 'day' | 'hour' = query.interval === 'hour' ? 'hour' : 'day';
  const timezone = (await identity.tenantTimezone(ctx)) ?? 'UTC';
  const rows = await calls.callTrend(ctx, range, interval, timezone);
  const byBucket = new Map(rows.map((row) => [row.bucket.getTime(), row]));
  const series: Trends['series'] = [];
  let bucket = DateTime.fromJSDate(range.from, { zone: timezone }).startOf(interval);
  const end = DateTime.fromJSDate(range.to, { zone: timezone });
  while (bucket < end) {
    if (series.length >= MAX_BUCKETS) throw appError('RANGE_TOO_LARGE', { max: MAX_BUCKETS, interval });
    const row = byBucket.get(bucket.toMillis());
    series.push({
      bucket: bucket.toUTC().toISO()!,
      calls: row?.calls ?? 0,
      answered: row?.answered ?? 0,
      minutes: minutesOf(row?.seconds ?? 0),
      spend: formatMoney(row?.spend ?? '0'),
    });
    bucket = bucket.plus({ [interval === 'day' ? 'days' : 'hours']: 1 }).startOf(interval);
  }
  return { interval, timezone, series };
}

/**
 * How long contacts waited for the agent's answers, at their ear (the voice pipeline's latency
 * meter, on each answer's agent turn): p50 and p95 of "caller stops → agent heard" over the calls
 * ended in the range, in all, per agent and per campaign with its agent.
 */
export async function answerLatency(ctx: TenantCtx, query: LatencyQuery): Promise<Latency> {
  const range = { ...rangeOf(ctx, query), ...(query.campaignId ? { campaignId: query.campaignId } : {}) };
  const rows = await calls.answerLatency(ctx, range);
  const [agentNames, campaignNames] = await Promise.all([
    agents.agentNames(ctx, [...new Set(rows.flatMap((row) => (row.agent_id ? [row.agent_id] : [])))]),
    campaigns.campaignNames(ctx, [...new Set(rows.flatMap((row) => (row.campaign_id ? [row.campaign_id] : [])))]),
  ]);
  const figures = (row: calls.AnswerLatencyRow | undefined) => ({
    answers: row?.answers ?? 0,
    p50Ms: row?.p50 ?? null,
    p95Ms: row?.p95 ?? null,
  });
  const agent = (row: calls.AnswerLatencyRow) => ({
    agentId: row.agent_id,
    agentName: (row.agent_id && agentNames.get(row.agent_id)) ?? null,
  });
  return {
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    ...figures(rows.find((row) => row.by === 'all')),
    byAgent: rows.filter((row) => row.by === 'agent').map((row) => ({ ...agent(row), ...figures(row) })),
    byCampaign: rows
      .filter((row) => row.by === 'campaign')
      .map((row) => ({
        campaignId: row.campaign_id,
        campaignName: (row.campaign_id && campaignNames.get(row.campaign_id)) ?? null,
        ...agent(row),
        ...figures(row),
      })),
  };
}

export async function getBindings(ctx: TenantCtx, agentId: string): Promise<Bindings> {
  await agents.requireAgent(ctx, agentId);
  const stored = await repo.bindingsOf(ctx.db, ctx.tenantId, agentId);
  return { agentId, fields: stored?.fields ?? [], updatedAt: stored ? stored.updated_at.toISOString() : null };
}

/** The fields the agent's analytics extracts (none bound: an empty list). */
export async function boundFields(ctx: TenantCtx, agentId: string) {
  return (await repo.bindingsOf(ctx.db, ctx.tenantId, agentId))?.fields ?? [];
}

/** Replaces the fields the agent extracts; names are unique, enumValues go with type enum only. */
export async function putBindings(ctx: TenantCtx, agentId: string, body: PutBindingsBody): Promise<Bindings> {
  await agents.requireAgent(ctx, agentId);
  const problems = body.fields.flatMap((field, i) => {
    const issues: { path: string; message: string }[] = [];
    if (body.fields.findIndex((other) => other.name === field.name) !== i)
      issues.push({ path: `/fields/${i}/name`, message: `repeats the field name ${field.name}` });
    if (field.type === 'enum' && !field.enumValues) issues.push({ path: `/fields/${i}/enumValues`, message: 'required for type enum' });
    if (field.type !== 'enum' && field.enumValues) issues.push({ path: `/fields/${i}/enumValues`, message: 'only for type enum' });
    return issues;
  });
  if (problems.length > 0) throw appError('VALIDATION_FAILED.bindingFields', {}, problems);
  const stored = await repo.putBindings(ctx.db, ctx.tenantId, agentId, body.fields);
  return { agentId, fields: stored.fields, updatedAt: stored.updated_at.toISOString() };
}

export async function listResults(ctx: TenantCtx, query: ResultsQuery, page: Page) {
  // The seed types these filters as strings; one that is not a UUID matches no agent or call.
  if ([query.agent_id, query.session_id].some((value) => value !== undefined && !isUuid(value))) return { data: [], total: 0 };
  const { rows, total } = await repo.listResults(ctx.db, ctx.tenantId, { agentId: query.agent_id, sessionId: query.session_id }, page);
  return {
    data: rows.map((row) => ({
      id: row.id,
      sessionId: row.call_id,
      agentId: row.agent_id,
      agentVersion: row.agent_version,
      campaignId: row.campaign_id,
      contactId: row.contact_id,
      fields: row.fields,
      status: row.status,
      summary: row.summary,
      // Records made before outcomes were kept have none: the call's own outcome was all there was.
      outcome: row.outcome ?? 'completed',
      extractedAt: row.extracted_at.toISOString(),
    })),
    total,
  };
}
