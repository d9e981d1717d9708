import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { MoneyString, Nullable, PATTERN_MESSAGE, StringEnum, Timestamp, Uuid } from '../../platform/schemas.ts';
import { CallCostSchema, CallUsageSchema, END_REASONS, TranscriptTurnSchema } from '../calls/service.ts';
import { TestContactSchema } from '../conversation/service.ts';

/** The limits of a suite (docs/decisions/0059-test-suites.md): a run of the largest stays within minutes offline. */
export const SUITE_LIMITS = { scenarios: 200, turns: 30, mocks: 20, assertions: 20 } as const;

const ToolName = Type.String({
  pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$',
  [PATTERN_MESSAGE]: 'a letter, then letters, digits or underscores (at most 64 in all)',
  description: "A tool's name: a built-in (end_call, book_appointment…) or one of the agent's custom tools.",
});
const Phrase = Type.String({ minLength: 1, maxLength: 500 });

const ToolCalled = Type.Object(
  {
    type: Type.Literal('tool_called'),
    tool: ToolName,
    arguments: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'Arguments the call must have had: every key given must be there with an equal value (objects compared the same way, key by key); other arguments may be there too.',
      }),
    ),
  },
  { additionalProperties: false, description: 'The agent called the tool at least once (with these arguments, when given).' },
);
const ToolNotCalled = Type.Object(
  { type: Type.Literal('tool_not_called'), tool: ToolName },
  { additionalProperties: false, description: 'The agent never called the tool.' },
);
const Said = Type.Object(
  { type: Type.Literal('said'), phrase: Phrase },
  { additionalProperties: false, description: "One of the agent's turns contains the phrase (case and spacing ignored)." },
);
const NeverSaid = Type.Object(
  { type: Type.Literal('never_said'), phrase: Phrase },
  { additionalProperties: false, description: "None of the agent's turns contains the phrase (case and spacing ignored)." },
);
const EndReasonIs = Type.Object(
  {
    type: Type.Literal('end_reason'),
    equals: Nullable(StringEnum(END_REASONS), {
      description: 'null: the agent never ended the conversation (the caller ran out of words).',
    }),
  },
  { additionalProperties: false, description: 'Why the conversation ended.' },
);
const FieldIs = Type.Object(
  {
    type: Type.Literal('field'),
    field: Type.String({
      minLength: 1,
      maxLength: 64,
      description: "A field of the agent's analytics bindings (PUT /analytics/agents/{agentId}/bindings).",
    }),
    equals: Type.Union([Type.String({ maxLength: 500 }), Type.Number(), Type.Boolean(), Type.Null()], {
      description: 'The value the model must extract from the transcript (strings compared ignoring case); null: the call did not say.',
    }),
  },
  { additionalProperties: false, description: 'Analytics extraction reads this value from the transcript. Needs a model.' },
);
const Rubric = Type.Object(
  {
    type: Type.Literal('rubric'),
    rubric: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'What a good conversation does, in words; the model judges the transcript by it.',
    }),
  },
  { additionalProperties: false, description: 'The model judges the transcript against the rubric; its reasoning is kept. Needs a model.' },
);

export const Assertion = Type.Union([ToolCalled, ToolNotCalled, Said, NeverSaid, EndReasonIs, FieldIs, Rubric]);
export type Assertion = Static<typeof Assertion>;

export const Scenario = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Unique within the suite; names the test case in a JUnit report.' }),
    contact: Type.Optional(
      Type.Object(
        {
          ...TestContactSchema.properties,
          variables: Type.Optional(
            Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 1000 }), {
              description: "As a pre-dial webhook gives them: fill the prompt's {{variables.<key>}}.",
            }),
          ),
        },
        { additionalProperties: false, description: "Who the agent believes it talks to: fills the prompt's {{name}}, {{metadata.*}}…" },
      ),
    ),
    script: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), {
        minItems: 1,
        maxItems: SUITE_LIMITS.turns,
        description: 'What the caller says, line by line, each after the agent answered the one before. Give script or persona.',
      }),
    ),
    persona: Type.Optional(
      Type.Object(
        {
          description: Type.String({ minLength: 1, maxLength: 2000, description: 'Who the caller is and how they talk.' }),
          goal: Type.String({ minLength: 1, maxLength: 1000, description: 'What the caller wants from the call.' }),
          maxTurns: Type.Optional(
            Type.Integer({ minimum: 1, maximum: SUITE_LIMITS.turns, description: 'Turns the caller takes at most (default 10).' }),
          ),
        },
        {
          additionalProperties: false,
          description:
            "A model plays the caller (the agent's model server), until it reaches its goal or maxTurns. Needs a model: without one the scenario is skipped.",
        },
      ),
    ),
    mocks: Type.Optional(
      Type.Array(
        Type.Object(
          {
            tool: ToolName,
            answer: Type.Union([Type.String({ maxLength: 4000 }), Type.Record(Type.String(), Type.Unknown())], {
              description: 'What the tool answers the model: text, or a JSON object sent as its JSON text.',
            }),
            ok: Type.Optional(Type.Boolean({ description: 'false: the tool answers as having failed (default true).' })),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: SUITE_LIMITS.mocks,
          description:
            "Tools' answers in this scenario: a mocked tool answers with its mock and nothing leaves the test (no HTTP tool is called, no message sent); end_call, transfer_call and opt_out still end the conversation when they answer ok. A custom tool without a mock answers that it is not mocked.",
        },
      ),
    ),
    assertions: Type.Array(Assertion, { minItems: 1, maxItems: SUITE_LIMITS.assertions }),
  },
  { additionalProperties: false },
);
export type Scenario = Static<typeof Scenario>;

const Scenarios = Type.Array(Scenario, { minItems: 1, maxItems: SUITE_LIMITS.scenarios });

export const CreateTestSuiteBody = Type.Object(
  {
    agentId: Uuid,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    runOnPublish: Type.Optional(
      Type.Boolean({ description: 'Publishing the agent runs the suite against the new version (default true).' }),
    ),
    scenarios: Scenarios,
  },
  { additionalProperties: false },
);
export type CreateTestSuiteBody = Static<typeof CreateTestSuiteBody>;

export const UpdateTestSuiteBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    runOnPublish: Type.Optional(Type.Boolean()),
    scenarios: Type.Optional(Scenarios),
  },
  { additionalProperties: false },
);
export type UpdateTestSuiteBody = Static<typeof UpdateTestSuiteBody>;

export const TestSuite = Type.Object({
  id: Uuid,
  agentId: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  runOnPublish: Type.Boolean(),
  scenarios: Type.Array(Scenario),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type TestSuite = Static<typeof TestSuite>;

export const TestSuitesQuery = Type.Object({ ...PageQuery.properties, agentId: Type.Optional(Uuid) }, { additionalProperties: false });
export type TestSuitesQuery = Static<typeof TestSuitesQuery>;

export const RunQuery = Type.Object(
  {
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description: "A published version of the suite's agent; absent: the agent as it is now.",
      }),
    ),
    voice: Type.Optional(
      Type.Boolean({
        description:
          "true: each scenario is played as a call through the voice pipeline, the caller's lines spoken by eSpeak NG and heard by the agent's speech-to-text (which it needs: 409 TEST_SUITE_VOICE_NEEDS_STT); default false, text.",
      }),
    ),
  },
  { additionalProperties: false },
);

export const VERDICTS = ['passed', 'failed', 'skipped'] as const;
export type Verdict = (typeof VERDICTS)[number];

export const AssertionVerdict = Type.Object({
  assertion: Assertion,
  verdict: StringEnum(VERDICTS, { description: 'skipped: it needs a model and none is configured, said in why.' }),
  why: Type.String({ description: 'One sentence: what was found.' }),
  reasoning: Type.Optional(Type.String({ description: "A rubric's: the model's reasoning, as it gave it." })),
});
export type AssertionVerdict = Static<typeof AssertionVerdict>;

export const ScenarioResult = Type.Object({
  index: Type.Integer({ description: "The scenario's place in the run's scenarios, from 0." }),
  name: Type.String(),
  status: StringEnum(VERDICTS, {
    description:
      'failed: an assertion failed (or the scenario could not run); passed: none failed and one passed at least; skipped: nothing could be judged.',
  }),
  reason: Nullable(Type.String({ description: 'Why the scenario was skipped or could not run.' })),
  assertions: Type.Array(AssertionVerdict),
  transcript: Type.Array(TranscriptTurnSchema),
  endReason: Nullable(StringEnum(END_REASONS)),
  usage: CallUsageSchema,
  cost: Type.Object(
    { ...CallCostSchema.properties },
    {
      description:
        "What the scenario cost: its model use (the agent's, the persona's and the judge's) and, through the voice pipeline, the speech heard and synthesised; debited like a test chat's.",
    },
  ),
  durationMs: Type.Integer(),
});
export type ScenarioResult = Static<typeof ScenarioResult>;

export const RUN_STATUSES = ['QUEUED', 'RUNNING', 'PASSED', 'FAILED'] as const;
export const TRIGGERS = ['manual', 'publish'] as const;

export const TestSuiteRun = Type.Object({
  id: Uuid,
  suiteId: Uuid,
  agentId: Uuid,
  agentVersion: Nullable(Type.Integer(), { description: 'The version run; null: the agent as it was when the run started.' }),
  trigger: StringEnum(TRIGGERS, { description: 'manual: asked for; publish: run as the version was published.' }),
  voice: Type.Boolean({
    description:
      'true: through the voice pipeline (the transcript holds what the recogniser heard, each agent turn its latency, the usage the speech); false: text.',
  }),
  status: StringEnum(RUN_STATUSES, { description: 'PASSED once every scenario ran and none failed; FAILED when one failed.' }),
  scenarios: Type.Integer({ description: 'Scenarios in the run.' }),
  passed: Type.Integer(),
  failed: Type.Integer(),
  skipped: Type.Integer(),
  passRate: Nullable(Type.Number(), { description: 'passed / (passed + failed), from 0 to 1; null until a scenario was judged.' }),
  costTotal: MoneyString,
  createdAt: Timestamp,
  startedAt: Nullable(Timestamp),
  finishedAt: Nullable(Timestamp),
});
export type TestSuiteRun = Static<typeof TestSuiteRun>;

export const TestSuiteRunDetail = Type.Object({
  ...TestSuiteRun.properties,
  results: Type.Array(ScenarioResult, { description: 'One per scenario run so far, in the scenarios’ order.' }),
});
export type TestSuiteRunDetail = Static<typeof TestSuiteRunDetail>;

export const VersionPassRate = Type.Object({
  agentVersion: Nullable(Type.Integer(), { description: 'null: runs of the live agent.' }),
  runs: Type.Integer({ description: 'Finished runs of this version.' }),
  passRate: Nullable(Type.Number(), { description: 'Over every finished run of the version: scenarios passed / judged.' }),
  latest: TestSuiteRun,
});
export const PassRates = Type.Object({
  suiteId: Uuid,
  versions: Type.Array(VersionPassRate, { description: 'Newest version first, live last.' }),
});
export type PassRates = Static<typeof PassRates>;

// ---------------------------------------------------------------------------------------------
// Scorecards: the checks every ended call is held to (docs/testing-agents.md § Scorecards)

export const SCORECARD_LIMITS = { checks: 20 } as const;

const ScorecardCheck = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'What the check stands for, such as "AI disclosed"; unique in the scorecard.',
    }),
    assertion: Assertion,
  },
  { additionalProperties: false },
);

export const PutScorecardBody = Type.Object(
  {
    checks: Type.Array(ScorecardCheck, {
      maxItems: SCORECARD_LIMITS.checks,
      description: 'Judged on every call that ends after the change, as test suites judge a scenario; empty: calls are not scored.',
    }),
  },
  { additionalProperties: false },
);
export type PutScorecardBody = Static<typeof PutScorecardBody>;

export const Scorecard = Type.Object({
  checks: Type.Array(ScorecardCheck),
  updatedAt: Nullable(Timestamp, { description: 'null: the tenant has set no checks.' }),
});
export type Scorecard = Static<typeof Scorecard>;

export const CallScorecard = Type.Object({
  callId: Uuid,
  agentId: Nullable(Uuid),
  campaignId: Nullable(Uuid),
  passed: Type.Boolean({ description: 'No check failed (a check a model could not judge is skipped, and fails nothing).' }),
  checks: Type.Array(Type.Object({ name: Type.String(), ...AssertionVerdict.properties })),
  cost: MoneyString,
  scoredAt: Timestamp,
});
export type CallScorecard = Static<typeof CallScorecard>;

export const CallScorecardsQuery = Type.Object({
  ...PageQuery.properties,
  passed: Type.Optional(Type.Boolean({ description: 'false: only the calls that failed a check.' })),
  campaignId: Type.Optional(Uuid),
  agentId: Type.Optional(Uuid),
  callId: Type.Optional(Uuid),
});
export type CallScorecardsQuery = Static<typeof CallScorecardsQuery>;
