/**
 * One scenario of a test suite, run through the engine that runs calls: the agent's session (its
 * model or the retrieval agent, its prompt filled for the scenario's contact, its tools answering
 * with the scenario's mocks), a caller who reads a script or, with a model, plays a persona, then
 * the assertions judged against the transcript. As text, or through the voice pipeline on a test
 * line (media's converseOnTestLine): the caller's lines spoken, the agent hearing them through its
 * speech-to-text and answering in its voice, the transcript what was heard.
 */
import { performance } from 'node:perf_hooks';
import type { Deps, TenantCtx } from '../../platform/context.ts';
import { AppError } from '../../platform/errors.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { Agent } from '../agents/schemas.ts';
import * as analytics from '../analytics/service.ts';
import * as calls from '../calls/service.ts';
import * as conversation from '../conversation/service.ts';
import * as media from '../media/service.ts';
import { judgeScenario, scenarioStatus, type Judge } from './assertions.ts';
import type * as repo from './repo.ts';
import type { AssertionVerdict, Scenario } from './schemas.ts';

export type Model = NonNullable<Awaited<ReturnType<typeof conversation.sessionFor>>['model']>;

const PERSONA_NEEDS_A_MODEL =
  'skipped: a persona needs a model to play the caller, and none is configured for the agent (set LLM_API_URL or connect a model server).';

export interface ScenarioSetup {
  agent: Agent;
  runId: string;
  index: number;
  scenario: Scenario;
  timezone: string;
  /** Through the voice pipeline, rather than as text. */
  voice?: boolean;
}

/** Runs the scenario and judges it: its result row, ready to be stored and billed. */
export async function runScenario(deps: Deps, ctx: TenantCtx, setup: ScenarioSetup): Promise<repo.ResultRow> {
  const started = performance.now();
  const { scenario, agent } = setup;
  const contact = scenario.contact ?? {};
  const counterpart: conversation.Counterpart = {
    name: contact.name ?? null,
    phone: contact.phoneNumber ?? null,
    email: contact.email ?? null,
    metadata: contact.metadata ?? {},
    variables: contact.variables ?? {},
    campaignName: null,
    timezone: setup.timezone,
  };
  const venue = { kind: 'suite' as const, runId: setup.runId, mocks: scenario.mocks ?? [] };
  const { session, model } = await conversation.sessionFor(deps, ctx, agent, counterpart, venue, ctx.clock.now());
  const extra: conversation.Tokens = { inputTokens: 0, outputTokens: 0 };
  /** Through the voice pipeline: what its speech used, and why the line ended the call. */
  let line: media.TestLineResult | undefined;
  const endReason = () => line?.ended ?? session.ended;
  const result = (status: string, reason: string | null, assertions: AssertionVerdict[], transcript: calls.TranscriptTurn[]) => {
    const spoken = conversation.usageOf(session, model);
    const usage = conversation.withExtraTokens(line ? calls.withSpeech(spoken, line.speech) : spoken, extra, model);
    return resultRow(ctx, setup.index, scenario, {
      status,
      reason,
      assertions,
      transcript,
      endReason: endReason(),
      usage,
      durationMs: Math.round(performance.now() - started),
    });
  };

  if (scenario.persona && !model) {
    const skipped = scenario.assertions.map((assertion) => ({ assertion, verdict: 'skipped' as const, why: PERSONA_NEEDS_A_MODEL }));
    return result('skipped', PERSONA_NEEDS_A_MODEL, skipped, []);
  }
  const transcript: calls.TranscriptTurn[] = [];
  // A model that fails the persona ends the conversation there (the agent's own failures end it too, llm_error, and are judged).
  const caller = callerOf(scenario, model, extra);
  let callerFailed: ProviderError | undefined;
  const nextLine = (sofar: calls.TranscriptTurn[]) =>
    caller(sofar).catch((error: unknown) => {
      if (!(error instanceof ProviderError)) throw error;
      callerFailed = error;
      return null;
    });
  try {
    if (setup.voice) line = await media.converseOnTestLine(deps, ctx, { agent, session, nextLine, transcript });
    else await conversation.converseInText(session, nextLine, transcript);
  } catch (error) {
    // Through the voice pipeline, before a word: its speech cannot be reached, or the agent changed since the run was asked for.
    if (error instanceof ProviderError || error instanceof AppError)
      return result('failed', `could not run: ${error.message}`, [], transcript);
    throw error;
  }
  if (callerFailed) return result('failed', `could not run: the model playing the caller failed: ${callerFailed.message}`, [], transcript);
  const judge = model ? judgeFor(ctx, agent, model, transcript, extra) : null;
  const verdicts = await judgeScenario(scenario.assertions, { transcript, endReason: endReason() }, judge);
  return result(scenarioStatus(verdicts), null, verdicts, transcript);
}

/** A scenario's result as it is stored, its usage priced. */
export function resultRow(
  ctx: TenantCtx,
  index: number,
  scenario: Scenario,
  outcome: {
    status: string;
    reason: string | null;
    assertions: AssertionVerdict[];
    transcript: calls.TranscriptTurn[];
    endReason: string | null;
    usage: calls.CallUsage;
    durationMs: number;
  },
): repo.ResultRow {
  const { cost, total } = calls.priceUsage(ctx, outcome.usage);
  return {
    scenario_index: index,
    name: scenario.name,
    status: outcome.status,
    reason: outcome.reason,
    assertions: outcome.assertions,
    transcript: outcome.transcript,
    end_reason: outcome.endReason,
    usage: outcome.usage as unknown as Record<string, unknown>,
    cost: cost as unknown as Record<string, string>,
    cost_total: total.toFixed(4),
    duration_ms: outcome.durationMs,
  };
}

/** The caller's next words, the conversation so far before them: the script's next line, or the persona's; null once done. */
function callerOf(scenario: Scenario, model: Model | null, extra: conversation.Tokens) {
  let turn = 0;
  return async (transcript: calls.TranscriptTurn[]): Promise<string | null> => {
    const index = turn++;
    if (!scenario.persona || !model) return scenario.script?.[index] ?? null;
    if (index >= (scenario.persona.maxTurns ?? conversation.PERSONA_TURNS)) return null;
    return conversation.personaLine(model, scenario.persona, transcript, extra);
  };
}

const RUBRIC_SCHEMA = {
  type: 'object',
  properties: {
    reasoning: { type: 'string', description: 'Why the conversation does or does not meet the rubric, citing what was said.' },
    passed: { type: 'boolean', description: 'Whether the conversation meets the rubric.' },
  },
  required: ['reasoning', 'passed'],
  additionalProperties: false,
};

/** The model's answers for field and rubric assertions, over the scenario's transcript; each is asked for once. */
export function judgeFor(
  ctx: TenantCtx,
  agent: Agent,
  model: Model,
  transcript: calls.TranscriptTurn[],
  extra: conversation.Tokens,
): Judge {
  const spoken = transcript.filter((turn) => turn.role === 'agent' || turn.role === 'contact');
  let fields: ReturnType<Judge['fields']> | undefined;
  return {
    fields() {
      fields ??= (async () => {
        const bound = await analytics.boundFields(ctx, agent.id);
        if (bound.length === 0) return { bound: [], values: {} };
        const extracted = await analytics.extractFields(model, spoken, bound);
        conversation.addTokens(extra, extracted.usage);
        return { bound: bound.map((field) => field.name), values: extracted.values };
      })();
      return fields;
    },
    async rubric(rubric) {
      const { answer, usage } = await model.chat.extract({
        model: model.name,
        system:
          'You judge a phone call between an agent and a caller against a rubric. Read the transcript, reason about what was said, then say whether the agent met the rubric.',
        user: `Rubric: ${rubric}\n\nTranscript:\n${spoken.map((turn) => `${turn.role}: ${turn.text}`).join('\n')}`,
        schemaName: 'rubric_verdict',
        schema: RUBRIC_SCHEMA,
      });
      conversation.addTokens(extra, usage);
      if (typeof answer.passed !== 'boolean') throw new ProviderError('The judge answered without a verdict.', { retryable: false });
      return { passed: answer.passed, reasoning: typeof answer.reasoning === 'string' ? answer.reasoning : '' };
    },
  };
}
