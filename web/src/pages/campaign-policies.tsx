import type { AnsweringMachine, Campaign, CreateCampaignBody, RetryOutcome, RetryRule, VoiceNumber } from '../../../src/api-types.ts';
import { Field, Select, TextArea } from '../ui.tsx';

/**
 * The campaign's policies beyond its schedule, each one of the API's fields: retry rules per
 * outcome, post-call messages, answering machines, the caller-ID pool and the simulator's script.
 */
export interface PolicyValues {
  /** Per outcome: '' (the minutes between attempts), 'minutes' (with `retryMinutes`), 'nextDay' or 'never'. */
  retry: Record<RetryOutcome, '' | 'minutes' | 'nextDay' | 'never'>;
  retryMinutes: Record<RetryOutcome, string>;
  postCallMessages: NonNullable<Campaign['postCallMessages']>;
  machine: 'off' | NonNullable<AnsweringMachine['onMachine']>;
  voicemailMessage: string;
  callerIds: string[];
  callerIdDailyCap: string;
  /** One line a contact says, per line. */
  simulatorScript: string;
}

const OUTCOMES: [RetryOutcome, string][] = [
  ['UNANSWERED', 'Unanswered'],
  ['BUSY', 'Busy'],
  ['VOICEMAIL', 'Answering machine (hung up on)'],
  ['FAILED', 'Failed'],
];

const ruleKind = (rule: RetryRule | undefined): PolicyValues['retry'][RetryOutcome] =>
  !rule ? '' : 'afterMinutes' in rule ? 'minutes' : 'nextDay' in rule ? 'nextDay' : 'never';

export function initialPolicies(campaign: Campaign | undefined): PolicyValues {
  const rules = campaign?.retryRules ?? {};
  const machine = campaign?.answeringMachine;
  return {
    retry: Object.fromEntries(OUTCOMES.map(([outcome]) => [outcome, ruleKind(rules[outcome])])) as PolicyValues['retry'],
    retryMinutes: Object.fromEntries(
      OUTCOMES.map(([outcome]) => {
        const rule = rules[outcome];
        return [outcome, rule && 'afterMinutes' in rule ? String(rule.afterMinutes) : ''];
      }),
    ) as PolicyValues['retryMinutes'],
    postCallMessages: campaign?.postCallMessages ?? 'EVERY_ATTEMPT',
    machine: !machine?.detect ? 'off' : (machine.onMachine ?? 'HANG_UP_AND_RETRY'),
    voicemailMessage: machine?.voicemailMessage ?? '',
    // The pool less the main number, which the API puts first.
    callerIds: (campaign?.voiceNumberIds ?? []).filter((id) => id !== campaign?.voiceNumberId),
    callerIdDailyCap: campaign?.callerIdDailyCap ? String(campaign.callerIdDailyCap) : '',
    simulatorScript: (campaign?.simulatorScript ?? []).join('\n'),
  };
}

/** The API's fields for these policies: null where nothing is set, so saving a draft clears what was removed. */
export function policyFields(values: PolicyValues, voiceNumberId: string): Partial<CreateCampaignBody> {
  const rules: Partial<Record<RetryOutcome, RetryRule>> = {};
  for (const [outcome] of OUTCOMES) {
    const kind = values.retry[outcome];
    if (kind === 'minutes') rules[outcome] = { afterMinutes: Number(values.retryMinutes[outcome]) };
    else if (kind === 'nextDay') rules[outcome] = { nextDay: true };
    else if (kind === 'never') rules[outcome] = { never: true };
  }
  const answeringMachine: AnsweringMachine | null =
    values.machine === 'off'
      ? null
      : {
          detect: true,
          onMachine: values.machine,
          ...(values.machine === 'LEAVE_VOICEMAIL' ? { voicemailMessage: values.voicemailMessage } : {}),
        };
  const lines = values.simulatorScript
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const pool = [...new Set([voiceNumberId, ...values.callerIds].filter(Boolean))];
  return {
    retryRules: Object.keys(rules).length ? rules : null,
    postCallMessages: values.postCallMessages,
    answeringMachine,
    voiceNumberIds: pool.length > 1 ? pool : null,
    callerIdDailyCap: values.callerIdDailyCap ? Number(values.callerIdDailyCap) : null,
    simulatorScript: lines.length ? lines : null,
  };
}

export function CampaignPolicies({
  values,
  onValues,
  numbers,
  voiceNumberId,
  problem,
}: {
  values: PolicyValues;
  onValues: (values: PolicyValues) => void;
  numbers: VoiceNumber[] | undefined;
  voiceNumberId: string;
  problem: (path: string) => string | undefined;
}) {
  const set = <K extends keyof PolicyValues>(field: K, value: PolicyValues[K]) => onValues({ ...values, [field]: value });
  const others = (numbers ?? []).filter((number) => number.id !== voiceNumberId);
  const togglePool = (id: string) =>
    set('callerIds', values.callerIds.includes(id) ? values.callerIds.filter((chosen) => chosen !== id) : [...values.callerIds, id]);
  return (
    <>
      <fieldset class="wide policy">
        <legend>Retry rules</legend>
        <p class="hint">When each outcome is dialled again, within the attempts per contact and the call window.</p>
        {OUTCOMES.map(([outcome, words]) => (
          <div key={outcome} class="policy-row">
            <Select
              label={`${words}: call again`}
              value={values.retry[outcome]}
              onValue={(kind) => set('retry', { ...values.retry, [outcome]: kind })}
              options={[
                ['', 'After the minutes between attempts'],
                ['minutes', 'After other minutes'],
                ['nextDay', 'The next day, when the window opens'],
                ['never', 'Never'],
              ]}
              problem={problem(`/retryRules/${outcome}`)}
            />
            {values.retry[outcome] === 'minutes' && (
              <Field
                label={`${words}: minutes`}
                type="number"
                inputMode="numeric"
                min={1}
                max={10080}
                step={1}
                required
                value={values.retryMinutes[outcome]}
                onValue={(minutes) => set('retryMinutes', { ...values.retryMinutes, [outcome]: minutes })}
                problem={problem(`/retryRules/${outcome}/afterMinutes`)}
              />
            )}
          </div>
        ))}
      </fieldset>
      <Select
        label="Follow-up messages"
        value={values.postCallMessages}
        onValue={(value) => set('postCallMessages', value)}
        options={[
          ['EVERY_ATTEMPT', 'After every call'],
          ['FINAL_OUTCOME', 'Once, after the final call'],
        ]}
        hint="The agent's post-call WhatsApp and SMS (under Messaging)."
        problem={problem('/postCallMessages')}
      />
      <Select
        label="Answering machines"
        value={values.machine}
        onValue={(value) => set('machine', value)}
        options={[
          ['off', 'Talk to whoever answers'],
          ['HANG_UP_AND_RETRY', 'Detect, hang up and call again later'],
          ['LEAVE_VOICEMAIL', 'Detect and leave a voicemail'],
        ]}
        hint="Detecting them works on Twilio and simulator numbers."
        problem={problem('/answeringMachine')}
      />
      {values.machine === 'LEAVE_VOICEMAIL' && (
        <TextArea
          class="wide full"
          label="Voicemail message"
          rows={3}
          maxLength={1000}
          required
          value={values.voicemailMessage}
          onValue={(value) => set('voicemailMessage', value)}
          hint="Said after the beep; {{name}} and the other variables of a first message work here."
          problem={problem('/answeringMachine/voicemailMessage')}
        />
      )}
      <fieldset class="wide policy">
        <legend>Caller-ID pool</legend>
        <p class="hint">
          More numbers to call from besides the voice number: each contact gets one of its country, then of its area code, when the pool has
          one.
        </p>
        {others.length === 0 && <p class="hint">No other voice number yet.</p>}
        {others.map((number) => (
          <label key={number.id}>
            <input type="checkbox" checked={values.callerIds.includes(number.id)} onChange={() => togglePool(number.id)} />{' '}
            {number.phoneNumber}
            {number.label ? ` (${number.label})` : ''}
          </label>
        ))}
        {problem('/voiceNumberIds') && <small class="problem">{problem('/voiceNumberIds')}</small>}
      </fieldset>
      <Field
        label="Dials per number per day (optional)"
        type="number"
        inputMode="numeric"
        min={1}
        max={100000}
        step={1}
        value={values.callerIdDailyCap}
        onValue={(value) => set('callerIdDailyCap', value)}
        hint="Empty: no cap."
        problem={problem('/callerIdDailyCap')}
      />
      <TextArea
        class="wide full"
        label="Simulated contact's script (optional)"
        rows={4}
        value={values.simulatorScript}
        onValue={(value) => set('simulatorScript', value)}
        hint="On simulator numbers: what each contact says, one line per turn. A line 'parking|garage => Thanks!' is said once the agent says one of those words. Empty: a default persona."
        problem={problem('/simulatorScript')}
      />
    </>
  );
}
