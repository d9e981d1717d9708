import './contacts.css';
import { useState } from 'preact/hooks';
import type { Contact, ContactList, CreateContactBody, CreateListBody, DeleteBatchBody, UploadResult } from '../../../src/api-types.ts';
import { api, query, upload, type Page } from '../api.ts';
import { countryOptions } from '../countries.ts';
import { useProfile } from '../profile.ts';
import { navigate } from '../router.ts';
import {
  ActionsHeader,
  Confirm,
  DataTable,
  Empty,
  ErrorMessage,
  Field,
  fieldErrorOf,
  Form,
  formatDate,
  PageTitle,
  Pagination,
  PhoneField,
  plural,
  Select,
  TextArea,
  useAction,
  useLoad,
} from '../ui.tsx';

const PAGE_SIZE = 25;

// The API's list record has no description field, so it travels in `metadata.description`.
const descriptionOf = (list: ContactList) => (typeof list.metadata.description === 'string' ? list.metadata.description : '');

/** Contact lists: create one, find and open them, delete with confirmation. */
export function ContactListsPage(_props: { params: Record<string, string> }) {
  const [page, setPage] = useState(1);
  const [search, setSearch] = useState('');
  const lists = useLoad(() => api<Page<ContactList>>('GET', `/contact-lists${query({ page, limit: PAGE_SIZE, search })}`), [page, search]);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [deleting, setDeleting] = useState<ContactList | undefined>(undefined);

  const create = useAction(async () => {
    const created = await api<ContactList>('POST', '/contact-lists', {
      name,
      ...(description ? { metadata: { description } } : {}),
    } satisfies CreateListBody);
    // A new list is empty: open it, where its contacts are added.
    navigate(`/contacts/${created.id}`);
  });
  const remove = useAction(async (list: ContactList) => {
    await api('DELETE', `/contact-lists/${list.id}`);
    setDeleting(undefined);
    await lists.reload();
  });
  const cancelDelete = () => {
    setDeleting(undefined);
    remove.clearError();
  };

  return (
    <>
      <PageTitle>Contacts</PageTitle>
      <section aria-labelledby="create-list-title">
        <h2 id="create-list-title">Create a contact list</h2>
        <Form class="grid-form" onSubmit={create.run}>
          <Field
            label="List name"
            value={name}
            onValue={setName}
            required
            maxLength={200}
            hint="Unique among your lists."
            problem={fieldErrorOf(create.error, '/name')}
          />
          <Field label="Description (optional)" value={description} onValue={setDescription} maxLength={500} />
          <ErrorMessage error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create list
          </button>
        </Form>
      </section>
      <section aria-labelledby="lists-title">
        <h2 id="lists-title">Contact lists</h2>
        <div class="contacts-search">
          <Field
            label="Search lists by name"
            type="search"
            value={search}
            maxLength={200}
            onValue={(value) => {
              setSearch(value);
              setPage(1);
            }}
          />
        </div>
        <ErrorMessage error={lists.error} />
        {lists.data && lists.data.data.length === 0 && (
          <Empty>{search ? 'No list name matches your search.' : 'No contact lists yet.'}</Empty>
        )}
        {lists.data && lists.data.data.length > 0 && (
          <>
            <DataTable
              wrapClass="contacts-table-wrap"
              rows={lists.data.data}
              rowKey={(list) => list.id}
              columns={[
                { header: 'Name', cell: (list) => <a href={`#/contacts/${list.id}`}>{list.name}</a> },
                { header: 'Description', cell: descriptionOf },
                { header: 'Contacts', cell: (list) => list.contactCount },
                { header: 'Created', cell: (list) => formatDate(list.createdAt) },
                {
                  header: <ActionsHeader />,
                  cell: (list) => (
                    <button type="button" class="danger" onClick={() => setDeleting(list)} aria-label={`Delete ${list.name}`}>
                      Delete
                    </button>
                  ),
                },
              ]}
            />
            <Pagination page={lists.data.page} limit={lists.data.limit} total={lists.data.total} onPage={setPage} />
          </>
        )}
      </section>
      <Confirm
        open={!!deleting}
        title="Delete this list?"
        confirmLabel="Delete list"
        onCancel={cancelDelete}
        onConfirm={() => void remove.run(deleting!)}
      >
        <p>
          “{deleting?.name}” and its {plural(deleting?.contactCount ?? 0, 'contact')} are deleted permanently. This cannot be undone.
        </p>
        <ErrorMessage error={remove.error} />
      </Confirm>
    </>
  );
}

/** One list: add a contact, import a CSV with progress and a report, browse, select and delete contacts. */
export function ContactListPage({ params }: { params: Record<string, string> }) {
  const listId = params.id!;
  const [page, setPage] = useState(1);
  const [search, setSearch] = useState('');
  const list = useLoad(() => api<ContactList>('GET', `/contact-lists/${listId}`), [listId]);
  const contacts = useLoad(
    () => api<Page<Contact>>('GET', `/contact-lists/${listId}/contacts${query({ page, limit: PAGE_SIZE, search: search.trim() })}`),
    [listId, page, search],
  );
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirmingDelete, setConfirmingDelete] = useState(false);

  const reloadAll = async () => {
    setSelected(new Set());
    await Promise.all([list.reload(), contacts.reload()]);
  };
  const goToPage = (next: number) => {
    setSelected(new Set());
    setPage(next);
  };
  // A new search starts at its first page with nothing selected, so no hidden contact is deleted.
  const searchFor = (text: string) => {
    setSearch(text);
    goToPage(1);
  };
  const deleteSelected = useAction(async () => {
    const contactIds = [...selected];
    await api('POST', `/contact-lists/${listId}/contacts/delete-batch`, { contactIds } satisfies DeleteBatchBody);
    setConfirmingDelete(false);
    // Deleting a whole last page would leave us past the end.
    const remaining = (contacts.data?.total ?? 0) - contactIds.length;
    const lastPage = Math.max(1, Math.ceil(remaining / PAGE_SIZE));
    if (page > lastPage) {
      goToPage(lastPage);
      await list.reload();
    } else await reloadAll();
  });

  return (
    <>
      <p class="contacts-back">
        <a href="#/contacts">← All contact lists</a>
      </p>
      <PageTitle>{list.data ? list.data.name : 'Contact list'}</PageTitle>
      <ErrorMessage error={list.error} />
      {list.data && (
        <p>
          {descriptionOf(list.data) && <>{descriptionOf(list.data)} · </>}
          {plural(list.data.contactCount, 'contact')}
        </p>
      )}
      <div class="contacts-tools">
        <AddContact listId={listId} onAdded={reloadAll} />
        <UploadCsv listId={listId} onImported={reloadAll} />
      </div>
      <ContactsTable
        contacts={contacts.data}
        search={search}
        onSearch={searchFor}
        error={contacts.error ?? deleteSelected.error}
        selected={selected}
        onSelect={setSelected}
        onPage={goToPage}
        onDeleteSelected={() => {
          deleteSelected.clearError();
          setConfirmingDelete(true);
        }}
      />
      <Confirm
        open={confirmingDelete}
        title={`Delete ${plural(selected.size, 'contact')}?`}
        confirmLabel="Delete contacts"
        onCancel={() => setConfirmingDelete(false)}
        onConfirm={() => void deleteSelected.run()}
      >
        <p>The selected contacts are removed from this list permanently. This cannot be undone.</p>
        <ErrorMessage error={deleteSelected.error} />
      </Confirm>
    </>
  );
}

/** `name=value` lines → custom variables, the same string entries a CSV's extra columns become. */
function parseVariables(text: string): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const equals = line.indexOf('=');
    if (equals < 1) throw new Error(`Write each custom variable as name=value; “${line.trim()}” has no name.`);
    variables[line.slice(0, equals).trim()] = line.slice(equals + 1).trim();
  }
  return variables;
}

function AddContact({ listId, onAdded }: { listId: string; onAdded: () => Promise<void> }) {
  const [phoneNumber, setPhoneNumber] = useState('');
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [variables, setVariables] = useState('');
  const add = useAction(async () => {
    const metadata = parseVariables(variables);
    const body = {
      phoneNumber,
      ...(name ? { name } : {}),
      ...(email ? { email } : {}),
      ...(Object.keys(metadata).length ? { metadata } : {}),
    } satisfies CreateContactBody;
    await api('POST', `/contact-lists/${listId}/contacts`, body);
    setPhoneNumber('');
    setName('');
    setEmail('');
    setVariables('');
    await onAdded();
  });
  return (
    <section aria-labelledby="add-contact-title">
      <h2 id="add-contact-title">Add a contact</h2>
      <Form class="grid-form" onSubmit={add.run}>
        <PhoneField
          value={phoneNumber}
          onValue={setPhoneNumber}
          placeholder="+14155550123"
          problem={fieldErrorOf(add.error, '/phoneNumber')}
        />
        <Field
          label="Name (optional)"
          value={name}
          onValue={setName}
          maxLength={200}
          autoComplete="off"
          problem={fieldErrorOf(add.error, '/name')}
        />
        <Field
          label="Email (optional)"
          type="email"
          value={email}
          onValue={setEmail}
          maxLength={254}
          autoComplete="off"
          problem={fieldErrorOf(add.error, '/email')}
        />
        <div class="wide contacts-variables">
          <TextArea
            label="Custom variables (optional)"
            rows={3}
            value={variables}
            onValue={setVariables}
            hint="One per line, as name=value (for example appointment_date=2026-12-01)."
          />
        </div>
        <ErrorMessage error={add.error} />
        <button type="submit" class="primary" disabled={add.busy}>
          Add contact
        </button>
      </Form>
    </section>
  );
}

function UploadCsv({ listId, onImported }: { listId: string; onImported: () => Promise<void> }) {
  const [file, setFile] = useState<File | undefined>(undefined);
  const [progress, setProgress] = useState(0);
  const [result, setResult] = useState<UploadResult | undefined>(undefined);
  const { profile } = useProfile();
  const [country, setCountry] = useState<string | undefined>(undefined);
  const defaultCountry = country ?? profile?.tenant.country ?? browserRegion() ?? '';
  const send = useAction(async () => {
    const form = new FormData();
    form.append('file', file!);
    setProgress(0);
    setResult(undefined);
    const answer = await upload<UploadResult>(`/contact-lists/${listId}/upload${query({ defaultCountry })}`, form, setProgress);
    // A small file may finish without a single progress event.
    setProgress(1);
    setResult(answer);
    await onImported();
  });
  const percent = Math.round(progress * 100);
  return (
    <section aria-labelledby="upload-title">
      <h2 id="upload-title">Upload contacts</h2>
      <Form class="grid-form" onSubmit={send.run}>
        <div class="field wide contacts-file">
          <label for="contacts-csv">CSV file</label>
          <input
            id="contacts-csv"
            type="file"
            accept=".csv,text/csv"
            required
            aria-describedby="contacts-csv-hint"
            onChange={(event) => setFile(event.currentTarget.files?.[0])}
          />
          <small id="contacts-csv-hint" class="hint">
            At most 500 rows and 5 MB. A phone column is required (phone_number, phone, mobile or customer_number); name, email and metadata
            (JSON) are optional; other columns become custom variables.
          </small>
        </div>
        <Select
          label="Country of numbers without +"
          value={defaultCountry}
          onValue={setCountry}
          options={[['', 'None: every number starts with +'], ...countryOptions()]}
          hint="A number written without + and country code, such as 030 1234567, is read as a number of this country."
          problem={fieldErrorOf(send.error, '/defaultCountry')}
        />
        <ErrorMessage error={send.error} />
        <button type="submit" class="primary" disabled={send.busy || !file}>
          Upload CSV
        </button>
        {(send.busy || result) && (
          <div class="wide contacts-progress">
            <label for="contacts-upload-progress">Upload progress</label>
            <progress id="contacts-upload-progress" max={100} value={percent}>
              {percent}%
            </progress>
          </div>
        )}
        <p class="wide contacts-upload-status" aria-live="polite">
          {send.busy && (percent < 100 ? `${percent}% sent.` : 'Sent; importing the rows…')}
          {!send.busy && result && `Imported ${plural(result.imported, 'contact')}, skipped ${plural(result.skipped, 'row')}.`}
        </p>
      </Form>
      {result && <UploadReport result={result} />}
    </section>
  );
}

/** The region of the browser's language (en-US → US), a likely country for national numbers. */
const browserRegion = () => {
  try {
    return new Intl.Locale(navigator.language).maximize().region;
  } catch {
    return undefined;
  }
};

function UploadReport({ result }: { result: UploadResult }) {
  return (
    <section class="callout contacts-report" aria-labelledby="upload-result-title">
      <h3 id="upload-result-title">Upload result</h3>
      <ul class="contacts-counts">
        <li>
          <strong data-testid="upload-imported">{result.imported}</strong> {result.imported === 1 ? 'contact' : 'contacts'} imported
        </li>
        <li>
          <strong data-testid="upload-skipped">{result.skipped}</strong> {result.skipped === 1 ? 'row' : 'rows'} skipped
        </li>
      </ul>
      {result.invalidRows.length > 0 && (
        <DataTable
          caption="Invalid rows (not imported)"
          rows={result.invalidRows}
          rowKey={(row) => row.row}
          columns={[
            { header: 'Row', cell: (row) => row.row },
            { header: 'Phone', cell: (row) => row.phone },
            { header: 'Reason', cell: (row) => row.reason },
          ]}
        />
      )}
    </section>
  );
}

const zoneOf = (contact: Contact & { timezone?: string | null }) => contact.timezone ?? undefined;

const variablesText = (metadata: Record<string, unknown>) =>
  Object.entries(metadata)
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');

function ContactsTable({
  contacts,
  search,
  onSearch,
  error,
  selected,
  onSelect,
  onPage,
  onDeleteSelected,
}: {
  contacts: Page<Contact> | undefined;
  search: string;
  onSearch: (text: string) => void;
  error: Error | undefined;
  selected: Set<string>;
  onSelect: (selected: Set<string>) => void;
  onPage: (page: number) => void;
  onDeleteSelected: () => void;
}) {
  const shown = contacts?.data ?? [];
  const allShownSelected = shown.length > 0 && shown.every((contact) => selected.has(contact.id));
  const toggle = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    onSelect(next);
  };
  const toggleAll = (on: boolean) => {
    const next = new Set(selected);
    for (const contact of shown) {
      if (on) next.add(contact.id);
      else next.delete(contact.id);
    }
    onSelect(next);
  };

  return (
    <section aria-labelledby="contacts-title">
      <h2 id="contacts-title">Contacts</h2>
      <div class="contacts-bar">
        <div class="contacts-search">
          <Field label="Search contacts (phone, name or email)" type="search" value={search} onValue={onSearch} maxLength={200} />
        </div>
        <button type="button" class="danger" disabled={selected.size === 0} onClick={onDeleteSelected}>
          Delete selected ({selected.size})
        </button>
      </div>
      <ErrorMessage error={error} />
      {contacts && contacts.total === 0 && (
        <Empty>{search.trim() ? `No contact matches “${search.trim()}”.` : 'No contacts yet: add one or import a CSV file.'}</Empty>
      )}
      {shown.length > 0 && (
        <DataTable
          rows={shown}
          rowKey={(contact) => contact.id}
          columns={[
            {
              header: (
                <input
                  type="checkbox"
                  aria-label="Select all contacts on this page"
                  checked={allShownSelected}
                  onChange={(event) => toggleAll(event.currentTarget.checked)}
                />
              ),
              headerClass: 'contacts-check',
              className: 'contacts-check',
              cell: (contact) => (
                <input
                  type="checkbox"
                  aria-label={`Select ${contact.name ?? contact.phoneNumber}`}
                  checked={selected.has(contact.id)}
                  onChange={(event) => toggle(contact.id, event.currentTarget.checked)}
                />
              ),
            },
            { header: 'Phone', cell: (contact) => contact.phoneNumber },
            { header: 'Name', cell: (contact) => contact.name ?? '—' },
            { header: 'Email', cell: (contact) => contact.email ?? '—' },
            // A contact's own time zone, where the service keeps one (its calls follow the window in that zone).
            ...(shown.some((contact) => zoneOf(contact))
              ? [{ header: 'Time zone', cell: (contact: Contact) => zoneOf(contact) ?? 'The campaign’s' }]
              : []),
            { header: 'Custom variables', cell: (contact) => variablesText(contact.metadata) || '—' },
            { header: 'Added', cell: (contact) => formatDate(contact.createdAt) },
          ]}
        />
      )}
      {contacts && contacts.total > 0 && <Pagination page={contacts.page} limit={contacts.limit} total={contacts.total} onPage={onPage} />}
    </section>
  );
}
