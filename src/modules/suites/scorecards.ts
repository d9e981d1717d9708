/**
 * Scorecards (issue 41, item 5): the checks a tenant holds every ended call to (AI disclosed, the
 * recording announced, an opt-out honoured, no forbidden promise), as test suites judge a
 * scenario: phrases, tools and the end reason from the transcript; rubrics and fields by the
 * agent's model where it has one (billed like a test chat's judging), skipped where it has none.
 * Each call is scored once, when it ends; a campaign call's scorecard is sealed into the tenant's
 * compliance chain, and a failed one is sent as `call.scorecard_failed`.
 */
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import { formatMoney, money } from '../../platform/money.ts';
import type { Page } from '../../platform/pagination.ts';
import * as agents from '../agents/service.ts';
import * as calls from '../calls/service.ts';
import * as compliance from '../compliance/service.ts';
import * as conversation from '../conversation/service.ts';
import * as events from '../events/service.ts';
import * as identity from '../identity/service.ts';
import { judgeScenario } from './assertions.ts';
import * as repo from './repo.ts';
import { judgeFor } from './runner.ts';
import type { AssertionVerdict, CallScorecard, CallScorecardsQuery, PutScorecardBody, Scorecard } from './schemas.ts';

type Check = PutScorecardBody['checks'][number];

export async function getScorecard(ctx: TenantCtx): Promise<Scorecard> {
  const row = await repo.findScorecard(ctx.db, ctx.tenantId);
  return { checks: (row?.checks ?? []) as Check[], updatedAt: row?.updated_at.toISOString() ?? null };
}

export async function putScorecard(ctx: TenantCtx, body: PutScorecardBody): Promise<Scorecard> {
  const names = body.checks.map((check) => check.name.trim().toLowerCase());
  const repeated = names.findIndex((name, index) => names.indexOf(name) !== index);
  if (repeated >= 0)
    throw appError(
      'VALIDATION_FAILED.scorecard',
      { problem: `Field 'checks.${repeated}.name' repeats the name of another check: name each check once.` },
      [{ path: `/checks/${repeated}/name`, message: 'repeats the name of another check' }],
    );
  const row = await repo.putScorecard(ctx.db, ctx.tenantId, body.checks, ctx.clock.now());
  return { checks: row.checks as Check[], updatedAt: row.updated_at.toISOString() };
}

const toCallScorecard = (row: repo.CallScorecardRow): CallScorecard => ({
  callId: row.call_id,
  agentId: row.agent_id,
  campaignId: row.campaign_id,
  passed: row.passed,
  checks: row.checks as CallScorecard['checks'],
  cost: formatMoney(money(row.cost_total)),
  scoredAt: row.scored_at.toISOString(),
});

export async function listCallScorecards(ctx: TenantCtx, query: CallScorecardsQuery, page: Page) {
  const { rows, total } = await repo.listCallScorecards(ctx.db, ctx.tenantId, query, page);
  return { data: rows.map(toCallScorecard), total };
}

/**
 * Scores an ended call against the tenant's checks, once (call.ended may come twice): nothing when
 * the tenant has none or no one spoke. Stored, billed, sealed and announced in one transaction.
 */
export async function scoreEndedCall(deps: Deps, ctx: TenantCtx, job: calls.CallEndedJob): Promise<void> {
  // Calls end in bursts: asked in the job's first turn, the call's row comes with the one statement
  // that reads the batch's ended calls for messaging and analytics, whether or not it is scored.
  const [scorecard, call] = await Promise.all([
    repo.findScorecard(ctx.db, ctx.tenantId),
    calls.endedCallRow(deps)(ctx.tenantId, job.callId),
  ]);
  const checks = (scorecard?.checks ?? []) as Check[];
  if (checks.length === 0 || (await repo.callScorecardExists(ctx.db, ctx.tenantId, job.callId))) return;
  const transcript = (call?.transcript ?? []) as calls.TranscriptTurn[];
  if (!call || !transcript.some((turn) => turn.role === 'contact')) return;
  const agent = call.agent_id ? await agents.agentOfCall(ctx, call) : undefined;
  const model = agent ? await conversation.modelFor(deps, ctx, agent) : null;
  const tokens: conversation.Tokens = { inputTokens: 0, outputTokens: 0 };
  const judge = agent && model ? judgeFor(ctx, agent, model, transcript, tokens) : null;
  const verdicts = await judgeScenario(
    checks.map((check) => check.assertion),
    { transcript, endReason: (call.end_reason as calls.EndReason | null) ?? null },
    judge,
  );
  const named = verdicts.map((verdict: AssertionVerdict, index) => ({ name: checks[index]!.name, ...verdict }));
  const passed = named.every((check) => check.verdict !== 'failed');
  const { total: cost } = calls.priceUsage(ctx, conversation.withExtraTokens(calls.NO_USAGE, tokens, model));
  const row: repo.CallScorecardRow = {
    call_id: call.id,
    agent_id: call.agent_id,
    campaign_id: call.campaign_id,
    passed,
    checks: named,
    cost_total: cost.toFixed(4),
    scored_at: ctx.clock.now(),
  };
  await withTransaction(ctx, async (txCtx) => {
    if (!(await repo.insertCallScorecard(txCtx.db, ctx.tenantId, row))) return;
    if (cost.greaterThan(0)) await identity.debitWallet(txCtx.db, ctx.tenantId, cost, `Scorecard of call ${call.id}`, call.id);
    if (call.campaign_id && call.contact_id)
      await compliance.recordScore(txCtx, {
        campaignId: call.campaign_id,
        contactId: call.contact_id,
        phoneNumber: call.direction === 'OUTGOING' ? call.to_number : call.from_number,
        score: passed ? 'passed' : 'failed',
        facts: { callId: call.id, checks: named.map(({ name, verdict, why }) => ({ name, verdict, why })) },
      });
    if (!passed) await events.emitEvent(txCtx, 'call.scorecard_failed', toCallScorecard(row), call.agent_id);
  });
}
