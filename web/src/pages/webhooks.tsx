import { useState } from 'preact/hooks';
import type { Delivery } from '../../../src/api-types.ts';
import { api, query, type Page } from '../api.ts';
import {
  ActionsHeader,
  DataTable,
  Empty,
  ErrorMessage,
  Form,
  formatDate,
  PageTitle,
  Pagination,
  Select,
  Status,
  useAction,
  useFilter,
  useLoad,
} from '../ui.tsx';

const PAGE_SIZE = 25;
const REFRESH_MS = 5000;
const STATUS_WORDS: Record<Delivery['status'], string> = { PENDING: 'Trying', DELIVERED: 'Delivered', FAILED: 'Failed' };

/** What the service posted to the API keys' webhook URLs, how each attempt went, and a way to send one again. */
export function WebhooksPage(_props: { params: Record<string, string> }) {
  const { value: status, set: setStatus, page, setPage } = useFilter();
  const [open, setOpen] = useState<string | undefined>(undefined);
  const deliveries = useLoad(
    () => api<Page<Delivery>>('GET', `/webhook-deliveries${query({ status, page, limit: PAGE_SIZE })}`),
    [status, page],
    REFRESH_MS,
  );
  const redeliver = useAction(async (delivery: Delivery) => {
    // 202: queued again; the list shows its next attempt when it has run.
    await api('POST', `/webhook-deliveries/${delivery.id}/redeliver`);
    await deliveries.reload();
  });
  const shown = deliveries.data?.data.find((delivery) => delivery.id === open);
  return (
    <>
      <PageTitle>Webhook deliveries</PageTitle>
      <p class="hint">
        Events posted to the webhook URL of an API key (set when the key is created, under API keys), signed with its secret. A failed
        delivery is tried again a few times; send it again yourself once your receiver is fixed.
      </p>
      <Form class="filters" role="search" aria-label="Filter deliveries">
        <Select
          label="Status"
          value={status}
          onValue={setStatus}
          options={[['', 'Any status'], ...Object.entries(STATUS_WORDS).map(([value, words]): [string, string] => [value, words])]}
        />
      </Form>
      <ErrorMessage error={deliveries.error ?? redeliver.error} />
      {deliveries.data && deliveries.data.total === 0 && (
        <Empty>
          No deliveries yet: give an API key a webhook URL, and events (a call completed, a campaign's status) are posted to it.
        </Empty>
      )}
      {deliveries.data && deliveries.data.total > 0 && (
        <>
          <DataTable
            rows={deliveries.data.data}
            rowKey={(delivery) => delivery.id}
            columns={[
              { header: 'Event', cell: (delivery) => <code>{delivery.eventType}</code>, rowHeader: true },
              { header: 'When', cell: (delivery) => formatDate(delivery.createdAt) },
              { header: 'To', cell: (delivery) => <code>{delivery.url}</code> },
              {
                header: 'State',
                cell: (delivery) => (
                  <>
                    <Status value={delivery.status} label={STATUS_WORDS[delivery.status]} />
                    <div class="hint">
                      {delivery.attemptCount === 1 ? '1 attempt' : `${delivery.attemptCount} attempts`}
                      {delivery.lastStatusCode !== null && `, last answer HTTP ${delivery.lastStatusCode}`}
                      {delivery.lastError && `: ${delivery.lastError}`}
                    </div>
                  </>
                ),
              },
              {
                header: <ActionsHeader />,
                cell: (delivery) => (
                  <div class="actions">
                    <button
                      type="button"
                      aria-expanded={open === delivery.id}
                      onClick={() => setOpen(open === delivery.id ? undefined : delivery.id)}
                    >
                      {open === delivery.id ? 'Hide' : 'Show'} body
                    </button>
                    <button type="button" disabled={redeliver.busy} onClick={() => void redeliver.run(delivery)}>
                      Redeliver
                    </button>
                  </div>
                ),
              },
            ]}
          />
          <Pagination page={deliveries.data.page} limit={deliveries.data.limit} total={deliveries.data.total} onPage={setPage} />
        </>
      )}
      {shown && (
        <section class="card" aria-labelledby="delivery-body-title">
          <h2 id="delivery-body-title">Body of the {shown.eventType} delivery</h2>
          <pre class="payload">{JSON.stringify(shown.payload, null, 2)}</pre>
          <DataTable
            caption="Attempts"
            rows={shown.attempts}
            rowKey={(attempt) => attempt.attempt}
            columns={[
              { header: 'Attempt', cell: (attempt) => attempt.attempt },
              { header: 'At', cell: (attempt) => formatDate(attempt.at) },
              { header: 'Answer', cell: (attempt) => (attempt.statusCode === null ? 'none' : `HTTP ${attempt.statusCode}`) },
              { header: 'Time', cell: (attempt) => `${attempt.durationMs} ms` },
              { header: 'Error', cell: (attempt) => attempt.error ?? '—' },
            ]}
          />
        </section>
      )}
    </>
  );
}
