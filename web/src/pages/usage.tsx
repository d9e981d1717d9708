import './usage.css';
import { useId, useState } from 'preact/hooks';
import type { Agent, Detail, Trends } from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import { useProfile } from '../profile.ts';
import { DataTable, Empty, ErrorMessage, formatMoney, namedOptions, PageTitle, Select, useLoad } from '../ui.tsx';

const DAY_MS = 86_400_000;

type Totals = Detail['totals'];
type AgentRow = NonNullable<Detail['byAgent']>[number];

const COMPONENTS: [keyof Omit<Totals, 'total'>, string][] = [
  ['stt', 'Speech to text (STT)'],
  ['tts', 'Text to speech (TTS)'],
  ['llm', 'Language model (LLM)'],
  ['telephony', 'Telephony'],
  ['platformFee', 'Platform fee'],
];

/** The last `days` days up to now, and the agent filter, as the analytics endpoints take them. */
function rangeQuery(days: number, agentId: string) {
  const to = new Date();
  return { from: new Date(to.getTime() - days * DAY_MS).toISOString(), to: to.toISOString(), agentId };
}

/** Usage: spend and call volume over time, and cost per component and per agent. */
export function UsagePage(_props: { params: Record<string, string> }) {
  const { profile } = useProfile();
  const [days, setDays] = useState('30');
  const [bucketSize, setBucketSize] = useState<'day' | 'hour'>('day');
  const [agentId, setAgentId] = useState('');
  const agents = useLoad(() => api<Page<Agent>>('GET', '/agents?limit=200'), []);
  const trends = useLoad(
    () => api<Trends>('GET', `/analytics/my-trends${query({ ...rangeQuery(Number(days), agentId), interval: bucketSize })}`),
    [days, bucketSize, agentId],
  );
  const detail = useLoad(() => api<Detail>('GET', `/analytics/my-detail${query(rangeQuery(Number(days), agentId))}`), [days, agentId]);
  const currency = detail.data?.currency ?? profile?.wallet.currency ?? 'USD';

  return (
    <>
      <PageTitle
        actions={
          <button type="button" onClick={() => (void trends.reload(), void detail.reload())} disabled={trends.loading || detail.loading}>
            Refresh
          </button>
        }
      >
        Usage
      </PageTitle>
      <div class="usage-controls" role="group" aria-label="What to show">
        <Select
          label="Range"
          value={days}
          onValue={setDays}
          options={[
            ['7', 'Last 7 days'],
            ['30', 'Last 30 days'],
            ['90', 'Last 90 days'],
          ]}
        />
        <Select
          label="Interval"
          value={bucketSize}
          onValue={(value) => setBucketSize(value as 'day' | 'hour')}
          options={[
            ['day', 'Per day'],
            ['hour', 'Per hour'],
          ]}
        />
        <Select label="Agent" value={agentId} onValue={setAgentId} options={namedOptions(agents.data?.data, ['', 'All agents'])} />
      </div>
      <ErrorMessage error={detail.error} />
      {detail.data && <Summary detail={detail.data} trends={trends.data} />}
      <section aria-labelledby="over-time-title">
        <h2 id="over-time-title">Over time</h2>
        <ErrorMessage error={trends.error} />
        {trends.data && <TrendCharts trends={trends.data} currency={currency} />}
      </section>
      {detail.data && <CostBreakdown detail={detail.data} />}
      {detail.data?.byAgent && <AgentTotals detail={detail.data} />}
    </>
  );
}

function Summary({ detail, trends }: { detail: Detail; trends: Trends | undefined }) {
  const answered = trends?.series.reduce((sum, point) => sum + point.answered, 0);
  const calls = trends?.series.reduce((sum, point) => sum + point.calls, 0);
  return (
    <div class="cards usage-summary">
      <div class="card">
        <div class="hint">Spend</div>
        <div class="metric">{formatMoney(detail.totals.total, detail.currency)}</div>
      </div>
      {detail.calls !== undefined && (
        <div class="card">
          <div class="hint">Calls</div>
          <div class="metric">{detail.calls}</div>
        </div>
      )}
      {detail.minutes !== undefined && (
        <div class="card">
          <div class="hint">Connected minutes</div>
          <div class="metric">{detail.minutes}</div>
        </div>
      )}
      {calls !== undefined && answered !== undefined && calls > 0 && (
        <div class="card">
          <div class="hint">Answered</div>
          <div class="metric">{Math.round((answered / calls) * 100)}%</div>
        </div>
      )}
    </div>
  );
}

function bucketFormat(trends: Trends) {
  const format = new Intl.DateTimeFormat(
    undefined,
    trends.interval === 'hour'
      ? { timeZone: trends.timezone, month: 'short', day: 'numeric', hour: 'numeric' }
      : { timeZone: trends.timezone, month: 'short', day: 'numeric' },
  );
  return (bucket: string) => format.format(new Date(bucket));
}

function TrendCharts({ trends, currency }: { trends: Trends; currency: string }) {
  const [showTable, setShowTable] = useState(false);
  const tableId = useId();
  const label = bucketFormat(trends);
  const unit = trends.interval === 'hour' ? 'hour' : 'day';
  if (trends.series.every((point) => point.calls === 0 && Number(point.spend) === 0)) return <Empty>No calls in this range.</Empty>;
  const money = (value: number) => formatMoney(String(value), currency);
  return (
    <>
      <div class="usage-charts">
        <BarChart
          title={`Spend per ${unit}`}
          labels={trends.series.map((point) => label(point.bucket))}
          values={trends.series.map((point) => Number(point.spend))}
          format={money}
        />
        <BarChart
          title={`Calls per ${unit}`}
          labels={trends.series.map((point) => label(point.bucket))}
          values={trends.series.map((point) => point.calls)}
          highlights={trends.series.map((point) => point.answered)}
          highlightName="answered"
          format={String}
        />
      </div>
      <p class="hint">Times are in {trends.timezone}.</p>
      <button type="button" aria-expanded={showTable} aria-controls={tableId} onClick={() => setShowTable(!showTable)}>
        {showTable ? 'Hide the data table' : 'Show the data as a table'}
      </button>
      {/* Focusable so that the scrolling table can be scrolled from the keyboard. */}
      <div id={tableId} hidden={!showTable} class="table-wrap usage-table usage-data" role="region" aria-label="Usage data" tabIndex={0}>
        {showTable && (
          <table>
            <caption class="visually-hidden">Calls, answered calls, minutes and spend per {unit}</caption>
            <thead>
              <tr>
                <th scope="col">{trends.interval === 'hour' ? 'Hour' : 'Day'}</th>
                <th scope="col">Calls</th>
                <th scope="col">Answered</th>
                <th scope="col">Minutes</th>
                <th scope="col">Spend</th>
              </tr>
            </thead>
            <tbody>
              {trends.series.map((point) => (
                <tr key={point.bucket}>
                  <th scope="row">{label(point.bucket)}</th>
                  <td>{point.calls}</td>
                  <td>{point.answered}</td>
                  <td>{point.minutes}</td>
                  <td>{formatMoney(point.spend, currency)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </>
  );
}

/**
 * Bars in a viewBox stretched to the figure's width (one 10-unit slot a bar); the labels are HTML
 * beside it, so they are not stretched with it.
 */
function BarChart({
  title,
  labels,
  values,
  highlights,
  highlightName,
  format,
}: {
  title: string;
  labels: string[];
  values: number[];
  highlights?: number[];
  highlightName?: string;
  format: (value: number) => string;
}) {
  const captionId = useId();
  const max = Math.max(...values, 0);
  const total = values.reduce((sum, value) => sum + value, 0);
  const peak = values.indexOf(max);
  const height = (value: number) => (max > 0 ? (value / max) * 100 : 0);
  const summary = `Total ${format(total)}${max > 0 ? `; highest ${format(max)} on ${labels[peak]}` : ''}.`;
  return (
    <figure class="card usage-chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <strong>{title}</strong> <span class="hint">{summary}</span>
      </figcaption>
      <div class="usage-plot">
        <span class="usage-axis-max" aria-hidden="true">
          {format(max)}
        </span>
        <svg viewBox={`0 0 ${values.length * 10} 100`} preserveAspectRatio="none" aria-hidden="true" focusable="false">
          {values.map((value, index) => (
            <g key={index}>
              <title>{`${labels[index]}: ${format(value)}${highlights ? `, ${format(highlights[index]!)} ${highlightName}` : ''}`}</title>
              <rect class="usage-bar" x={index * 10 + 1} width={8} y={100 - height(value)} height={height(value)} />
              {highlights && (
                <rect
                  class="usage-bar-highlight"
                  x={index * 10 + 1}
                  width={8}
                  y={100 - height(highlights[index]!)}
                  height={height(highlights[index]!)}
                />
              )}
            </g>
          ))}
          <line x1={0} x2={values.length * 10} y1={100} y2={100} class="usage-baseline" vector-effect="non-scaling-stroke" />
        </svg>
      </div>
      <div class="usage-axis-x" aria-hidden="true">
        <span>{labels[0]}</span>
        <span>{labels[labels.length - 1]}</span>
      </div>
      {highlights && (
        <p class="usage-legend" aria-hidden="true">
          <span class="usage-swatch" /> all calls <span class="usage-swatch usage-swatch-highlight" /> {highlightName}
        </p>
      )}
    </figure>
  );
}

function CostBreakdown({ detail }: { detail: Detail }) {
  const total = Number(detail.totals.total);
  return (
    <section aria-labelledby="components-title">
      <h2 id="components-title">Cost per component</h2>
      <DataTable
        wrapClass="usage-table"
        rows={COMPONENTS}
        rowKey={([key]) => key}
        columns={[
          { header: 'Component', rowHeader: true, cell: ([, name]) => name },
          { header: 'Cost', cell: ([key]) => formatMoney(detail.totals[key], detail.currency) },
          {
            header: 'Share',
            cell: ([key]) => {
              const share = total > 0 ? (Number(detail.totals[key]) / total) * 100 : 0;
              return (
                <div class="usage-share-cell">
                  <span class="usage-share" aria-hidden="true">
                    <span style={{ width: `${share}%` }} />
                  </span>
                  {share.toFixed(1)}%
                </div>
              );
            },
          },
        ]}
        foot={
          <tr class="usage-total">
            <th scope="row">Total</th>
            <td>
              <strong>{formatMoney(detail.totals.total, detail.currency)}</strong>
            </td>
            <td />
          </tr>
        }
      />
    </section>
  );
}

function AgentTotals({ detail }: { detail: Detail }) {
  const rows = detail.byAgent ?? [];
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Per agent</h2>
      {rows.length === 0 && <Empty>No calls ended in this range.</Empty>}
      {rows.length > 0 && (
        <DataTable
          wrapClass="usage-table"
          rows={rows}
          rowKey={(row) => row.agentId ?? 'none'}
          columns={[
            { header: 'Agent', rowHeader: true, cell: (row) => row.agentName ?? (row.agentId ? 'Deleted agent' : 'No agent') },
            { header: 'Calls', cell: (row) => row.calls },
            { header: 'Minutes', cell: (row) => row.minutes },
            ...COMPONENTS.map(([key, name]) => ({ header: name, cell: (row: AgentRow) => formatMoney(row.totals[key], detail.currency) })),
            { header: 'Total', cell: (row) => <strong>{formatMoney(row.totals.total, detail.currency)}</strong> },
          ]}
        />
      )}
    </section>
  );
}
