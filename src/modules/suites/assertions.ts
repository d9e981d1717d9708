/**
 * A scenario's assertions judged against its conversation. Tools, phrases and the end reason are
 * read from the transcript, deterministically; extracted fields and rubrics need a model, which
 * reads the transcript (analytics' extraction, a judge's verdict with its reasoning): without one
 * they are skipped and say so, never passed.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EndReason, TranscriptTurn } from '../calls/service.ts';
import type { Assertion, AssertionVerdict } from './schemas.ts';

/** What the model answers for the assertions that need one; null when there is no model. */
export interface Judge {
  /** The agent's bound analytics fields, as extraction reads them from the transcript (asked once per scenario). */
  fields(): Promise<{ bound: string[]; values: Record<string, unknown> }>;
  rubric(rubric: string): Promise<{ passed: boolean; reasoning: string }>;
}

export const NEEDS_A_MODEL = 'skipped: needs a model (none is configured for the agent: set LLM_API_URL or connect a model server).';

/** Lower case, one space between words, typographic quotes as plain ones: "said" is about words, not typing. */
export const normalized = (text: string) =>
  text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\s+/g, ' ')
    .trim();

/** Whether `actual` has every key of `expected` with an equal value, objects compared the same way (arrays and scalars must be equal). */
export function matchesSubset(expected: unknown, actual: unknown): boolean {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(expected).every(
      ([key, value]) => Object.hasOwn(actual, key) && matchesSubset(value, (actual as Record<string, unknown>)[key]),
    );
  }
  return isDeepStrictEqual(expected, actual);
}

const quoted = (value: unknown) => JSON.stringify(value);

type ToolTurn = TranscriptTurn & { tool: NonNullable<TranscriptTurn['tool']> };

function judgeTool(assertion: Extract<Assertion, { type: 'tool_called' | 'tool_not_called' }>, transcript: TranscriptTurn[]) {
  const toolTurns = transcript.filter((turn): turn is ToolTurn => turn.role === 'tool' && turn.tool !== undefined);
  const calls = toolTurns.filter((turn) => turn.tool.name === assertion.tool);
  const called = [...new Set(toolTurns.map((turn) => turn.tool.name))];
  const none = `${assertion.tool} was never called (tools called: ${called.join(', ') || 'none'}).`;
  if (assertion.type === 'tool_not_called')
    return calls.length === 0
      ? { verdict: 'passed' as const, why: none }
      : {
          verdict: 'failed' as const,
          why: `${assertion.tool} was called ${calls.length} time(s), first with ${quoted(calls[0]!.tool.arguments)}.`,
        };
  if (calls.length === 0) return { verdict: 'failed' as const, why: none };
  if (!assertion.arguments)
    return { verdict: 'passed' as const, why: `${assertion.tool} was called with ${quoted(calls[0]!.tool.arguments)}.` };
  const match = calls.find((turn) => matchesSubset(assertion.arguments, turn.tool.arguments));
  return match
    ? {
        verdict: 'passed' as const,
        why: `${assertion.tool} was called with ${quoted(match.tool.arguments)}, which includes ${quoted(assertion.arguments)}.`,
      }
    : {
        verdict: 'failed' as const,
        why: `${assertion.tool} was called ${calls.length} time(s), never with ${quoted(assertion.arguments)}: with ${calls.map((turn) => quoted(turn.tool.arguments)).join(', ')}.`,
      };
}

function judgePhrase(assertion: Extract<Assertion, { type: 'said' | 'never_said' }>, transcript: TranscriptTurn[]) {
  const phrase = normalized(assertion.phrase);
  const index = transcript.findIndex((turn) => turn.role === 'agent' && normalized(turn.text).includes(phrase));
  const found =
    index >= 0
      ? `The agent said "${assertion.phrase}" in turn ${index + 1}: "${transcript[index]!.text}".`
      : `No turn of the agent says "${assertion.phrase}".`;
  const wanted = assertion.type === 'said' ? index >= 0 : index < 0;
  return { verdict: wanted ? ('passed' as const) : ('failed' as const), why: found };
}

/** The verdict of each assertion, in order. `judge` is null when there is no model. */
export async function judgeScenario(
  assertions: Assertion[],
  outcome: { transcript: TranscriptTurn[]; endReason: EndReason | null },
  judge: Judge | null,
): Promise<AssertionVerdict[]> {
  const verdicts: AssertionVerdict[] = [];
  for (const assertion of assertions) {
    const verdict = await judgeOne(assertion, outcome, judge).catch((error: unknown) => ({
      verdict: 'failed' as const,
      why: `The model could not judge it: ${error instanceof Error ? error.message : String(error)}`,
    }));
    verdicts.push({ assertion, ...verdict });
  }
  return verdicts;
}

async function judgeOne(
  assertion: Assertion,
  { transcript, endReason }: { transcript: TranscriptTurn[]; endReason: EndReason | null },
  judge: Judge | null,
): Promise<Omit<AssertionVerdict, 'assertion'>> {
  switch (assertion.type) {
    case 'tool_called':
    case 'tool_not_called':
      return judgeTool(assertion, transcript);
    case 'said':
    case 'never_said':
      return judgePhrase(assertion, transcript);
    case 'end_reason': {
      const ended = endReason ? `The conversation ended with ${endReason}.` : 'The agent never ended the conversation.';
      return { verdict: endReason === assertion.equals ? 'passed' : 'failed', why: ended };
    }
    case 'field': {
      if (!judge) return { verdict: 'skipped', why: NEEDS_A_MODEL };
      const { bound, values } = await judge.fields();
      if (!bound.includes(assertion.field))
        return {
          verdict: 'failed',
          why: `The agent's analytics binds no field ${assertion.field} (bound: ${bound.join(', ') || 'none'}); add it with PUT /analytics/agents/{agentId}/bindings.`,
        };
      const value = Object.hasOwn(values, assertion.field) ? values[assertion.field] : null;
      const equal =
        typeof value === 'string' && typeof assertion.equals === 'string'
          ? normalized(value) === normalized(assertion.equals)
          : isDeepStrictEqual(value, assertion.equals);
      return { verdict: equal ? 'passed' : 'failed', why: `The model extracted ${assertion.field} = ${quoted(value)}.` };
    }
    case 'rubric': {
      if (!judge) return { verdict: 'skipped', why: NEEDS_A_MODEL };
      const { passed, reasoning } = await judge.rubric(assertion.rubric);
      return { verdict: passed ? 'passed' : 'failed', why: `The model judged the rubric ${passed ? 'met' : 'not met'}.`, reasoning };
    }
  }
}

/** failed when an assertion failed; passed when none did and one passed at least; skipped when nothing could be judged. */
export function scenarioStatus(verdicts: AssertionVerdict[]): AssertionVerdict['verdict'] {
  if (verdicts.some((verdict) => verdict.verdict === 'failed')) return 'failed';
  return verdicts.some((verdict) => verdict.verdict === 'passed') ? 'passed' : 'skipped';
}
