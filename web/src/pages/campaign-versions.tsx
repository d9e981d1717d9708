import type { Campaign, CreateCampaignBody, ExperimentReport } from '../../../src/api-types.ts';
import { api } from '../api.ts';
import { DataTable, Empty, ErrorMessage, Field, formatMoney, Select, useLoad } from '../ui.tsx';
import { percent, versionInWords } from '../words.ts';
import { versionsLoad } from './agent-versions.tsx';

/** Which agent the calls run: the agent as it is at each call, one published version, or an experiment between versions. */
export interface VersionValues {
  mode: 'live' | 'pinned' | 'experiment';
  agentVersion: string;
  arms: { version: string; weight: string }[];
}

const MAX_ARMS = 10;
const newArm = () => ({ version: '', weight: '1' });

export function initialVersions(campaign: Campaign | undefined): VersionValues {
  const arms = campaign?.experiment?.arms.map((arm) => ({ version: String(arm.version), weight: String(arm.weight) }));
  return {
    mode: arms ? 'experiment' : campaign?.agentVersion ? 'pinned' : 'live',
    agentVersion: campaign?.agentVersion ? String(campaign.agentVersion) : '',
    arms: arms ?? [newArm(), newArm()],
  };
}

/** The API's fields: null where the mode does not use them, so saving a draft clears what was switched off. */
export function versionFields(values: VersionValues): Pick<CreateCampaignBody, 'agentVersion' | 'experiment'> {
  return {
    agentVersion: values.mode === 'pinned' && values.agentVersion ? Number(values.agentVersion) : null,
    experiment:
      values.mode === 'experiment'
        ? { arms: values.arms.map((arm) => ({ version: Number(arm.version), weight: Number(arm.weight) })) }
        : null,
  };
}

/** The campaign form's choice of the agent's version, with an experiment's arms as rows of a version and its weight. */
export function CampaignVersions({
  values,
  onValues,
  agentId,
  problem,
}: {
  values: VersionValues;
  onValues: (values: VersionValues) => void;
  agentId: string;
  problem: (path: string) => string | undefined;
}) {
  const versions = useLoad(() => (agentId ? versionsLoad(agentId) : Promise.resolve(undefined)), [agentId]);
  const options: [string, string][] = [
    ['', 'Not chosen yet'],
    ...(versions.data?.data ?? []).map((found): [string, string] => [
      String(found.version),
      `${versionInWords(found.version)}${found.note ? `: ${found.note}` : ''}`,
    ]),
  ];
  const setArm = (index: number, field: 'version' | 'weight', value: string) =>
    onValues({ ...values, arms: values.arms.map((arm, at) => (at === index ? { ...arm, [field]: value } : arm)) });
  const none = versions.data?.total === 0;
  return (
    <fieldset class="wide policy campaign-versions">
      <legend>Agent version</legend>
      <ErrorMessage error={versions.error} />
      <Select
        label="The calls run"
        value={values.mode}
        onValue={(mode) => onValues({ ...values, mode })}
        options={[
          ['live', 'The agent as it is at each call'],
          ['pinned', 'One published version'],
          ['experiment', 'An experiment: contacts split between versions'],
        ]}
        hint={
          !agentId
            ? 'Choose the agent first.'
            : none
              ? 'The agent has no published version yet: publish one on its page.'
              : 'A version is frozen: editing the agent later does not change the calls.'
        }
        problem={problem('/experiment')}
      />
      {values.mode === 'pinned' && (
        <Select
          label="Version"
          value={values.agentVersion}
          onValue={(agentVersion) => onValues({ ...values, agentVersion })}
          options={options}
          problem={problem('/agentVersion')}
        />
      )}
      {values.mode === 'experiment' && (
        <>
          <p class="hint">
            Each contact is given one arm when the campaign starts, drawn by weight (weights 1 and 3: a quarter and three quarters), and
            every attempt runs its version. The campaign's page compares the arms.
          </p>
          {values.arms.map((arm, index) => (
            <div class="policy-row" key={index}>
              <Select
                label={`Arm ${index + 1}: version`}
                value={arm.version}
                onValue={(value) => setArm(index, 'version', value)}
                options={options}
                problem={problem(`/experiment/arms/${index}/version`) ?? problem(`/experiment/arms/${index}`)}
              />
              <Field
                label={`Arm ${index + 1}: weight`}
                type="number"
                inputMode="numeric"
                min={1}
                max={1000}
                step={1}
                required
                value={arm.weight}
                onValue={(value) => setArm(index, 'weight', value)}
                problem={problem(`/experiment/arms/${index}/weight`)}
              />
              {values.arms.length > 2 && (
                <button
                  type="button"
                  aria-label={`Remove arm ${index + 1}`}
                  onClick={() => onValues({ ...values, arms: values.arms.filter((_, at) => at !== index) })}
                >
                  Remove
                </button>
              )}
            </div>
          ))}
          {problem('/experiment/arms') && <small class="problem">{problem('/experiment/arms')}</small>}
          {values.arms.length < MAX_ARMS && (
            <button type="button" onClick={() => onValues({ ...values, arms: [...values.arms, newArm()] })}>
              Add an arm
            </button>
          )}
        </>
      )}
    </fieldset>
  );
}

/** A campaign's version in words, for its settings. */
export const campaignVersionInWords = (campaign: Campaign) =>
  campaign.experiment
    ? `Experiment: ${campaign.experiment.arms.map((arm) => `${versionInWords(arm.version)} (weight ${arm.weight})`).join(', ')}`
    : campaign.agentVersion
      ? versionInWords(campaign.agentVersion)
      : 'The agent as it is at each call';

/**
 * An experiment's arms side by side (contacts, calls, success rate, cost per success) and each
 * arm's comparison with the first: its p-value and the API's verdict in a sentence.
 */
export function ExperimentSection({ campaignId, refreshMs }: { campaignId: string; refreshMs: number | undefined }) {
  const report = useLoad(() => api<ExperimentReport>('GET', `/analytics/campaigns/${campaignId}/experiment`), [campaignId], refreshMs);
  const data = report.data;
  const comparisonOf = (version: number | null) => data?.comparisons.find((comparison) => comparison.version === version);
  return (
    <section aria-labelledby="experiment-title">
      <h2 id="experiment-title">Experiment</h2>
      <ErrorMessage error={report.error} />
      {data && data.arms.length === 0 && <Empty>No arm yet.</Empty>}
      {data && data.arms.length > 0 && (
        <>
          <p class="hint">
            A success: {data.success.join(' or ').replaceAll('_', ' ')}, at least once per contact called. Each arm is compared with the
            first; significant below p = {data.alpha}.
          </p>
          <DataTable
            tableClass="experiment-arms"
            rows={data.arms}
            rowKey={(arm) => arm.version ?? 'live'}
            columns={[
              { header: 'Arm', rowHeader: true, cell: (arm) => versionInWords(arm.version) },
              { header: 'Weight', cell: (arm) => arm.weight ?? '—' },
              { header: 'Contacts', cell: (arm) => arm.contacts },
              { header: 'Calls', cell: (arm) => arm.calls },
              { header: 'Successes', cell: (arm) => arm.successes },
              { header: 'Success rate', cell: (arm) => percent(arm.successRate) },
              { header: 'Cost', cell: (arm) => formatMoney(arm.cost, data.currency) },
              { header: 'Cost per success', cell: (arm) => (arm.costPerSuccess ? formatMoney(arm.costPerSuccess, data.currency) : '—') },
              {
                header: 'p-value',
                cell: (arm) => (arm === data.arms[0] ? 'control' : (comparisonOf(arm.version)?.pValue ?? '—')),
              },
            ]}
          />
          <ul class="experiment-verdicts" aria-live="polite">
            {data.comparisons.map((comparison) => (
              <li key={comparison.version} class={comparison.significant ? undefined : 'hint'}>
                {comparison.message}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
