import type { ComponentChildren, FormHTMLAttributes } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type FieldError } from './api.ts';

/** Loads data and reloads it on demand (or every `refreshMs`); errors are kept to show. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const reload = useCallback(async () => {
    try {
      setData(await load());
      setError(undefined);
    } catch (caught) {
      setError(caught as Error);
    } finally {
      setLoading(false);
    }
  }, deps);
  useEffect(() => {
    setLoading(true);
    void reload();
    if (!refreshMs) return;
    const timer = setInterval(() => void reload(), refreshMs);
    return () => clearInterval(timer);
  }, [reload, refreshMs]);
  return { data, error, loading, reload };
}

/** A list's filter and its page of results: a new filter starts again at the first page. */
export function useFilter(initial = '') {
  const [value, setValue] = useState(initial);
  const [page, setPage] = useState(1);
  const set = (next: string) => {
    setValue(next);
    setPage(1);
  };
  return { value, set, page, setPage };
}

/** Runs an action (a form submit, a button) and keeps its error and busy state. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await action(...args);
    } catch (caught) {
      setError(caught as Error);
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clearError: () => setError(undefined) };
}

/** The API's own sentence, announced to screen readers. */
export function ErrorMessage({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export const fieldErrorOf = (error: Error | undefined, path: string) =>
  error instanceof ApiError ? error.details.find((detail: FieldError) => detail.path === path)?.message : undefined;

/** The API's problems under a path (the items of a JSON field), one a line, each naming its item: "scenarios/0/script: …". */
const problemsUnder = (error: Error | undefined, path: string) =>
  error instanceof ApiError
    ? error.details
        .filter((detail) => detail.path.startsWith(path))
        .map((detail) => `${detail.path.slice(1)}: ${detail.message}`)
        .join('\n') || undefined
    : undefined;

/**
 * The state of a JSON field: its text, and `parsed()` for a submit, which answers the value, or
 * undefined after noting why the text is not JSON (`notJson`, shown at the field).
 */
export function useJsonText(initial: unknown) {
  const [text, setText] = useState(JSON.stringify(initial, null, 2));
  const [notJson, setNotJson] = useState<string | undefined>(undefined);
  const parsed = (): { value: unknown } | undefined => {
    try {
      const value = JSON.parse(text) as unknown;
      setNotJson(undefined);
      return { value };
    } catch (caught) {
      setNotJson(`is not JSON: ${(caught as Error).message}`);
      return undefined;
    }
  };
  return { text, setText, notJson, parsed };
}

/** A list edited as JSON: its own problem (not JSON), else the API's problems with its items (under `path`, such as `/checks`). */
export function JsonField({
  label,
  json,
  hint,
  error,
  path,
}: {
  label: string;
  json: ReturnType<typeof useJsonText>;
  hint: string;
  error: Error | undefined;
  path: string;
}) {
  return (
    <TextArea
      class="wide agents-long"
      label={label}
      rows={14}
      value={json.text}
      onValue={json.setText}
      hint={hint}
      problem={json.notJson ?? problemsUnder(error, path)}
    />
  );
}

let fieldCounter = 0;
const useFieldId = () => useRef(`field-${++fieldCounter}`).current;

interface InputProps {
  label: string;
  type?: string;
  required?: boolean;
  placeholder?: string;
  maxLength?: number;
  min?: string | number;
  max?: string | number;
  step?: string | number;
  pattern?: string;
  autoComplete?: string;
  inputMode?: 'numeric' | 'decimal' | 'tel' | 'email' | 'url' | 'search' | 'text';
  disabled?: boolean;
  /** The id of a <datalist> of suggestions. */
  list?: string;
  value: string;
  onValue: (value: string) => void;
  hint?: string;
  problem?: string;
}

/** The ids of a control's hint, note and problem, for its aria-describedby. */
const describedBy = (id: string, hint: unknown, note: unknown, problem: unknown) =>
  [hint ? `${id}-hint` : '', note ? `${id}-note` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ') || undefined;

/** What a control's aria-describedby points at: its hint, a further note and the API's problem with it. */
function Notes({ id, hint, note, problem }: { id: string; hint?: string; note?: ComponentChildren; problem?: string }) {
  return (
    <>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {note && (
        <small id={`${id}-note`} class="hint">
          {note}
        </small>
      )}
      {problem && (
        <small id={`${id}-problem`} class="problem">
          {problem}
        </small>
      )}
    </>
  );
}

/** A labelled input; `hint` and `problem` are tied to it for assistive technology. */
export function Field({ label, value, onValue, hint, problem, ...rest }: InputProps) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-describedby={describedBy(id, hint, undefined, problem)}
        aria-invalid={problem ? true : undefined}
        {...(rest as Record<string, unknown>)}
      />
      <Notes id={id} hint={hint} problem={problem} />
    </div>
  );
}

export function Select<V extends string>({
  label,
  value,
  onValue,
  options,
  hint,
  problem,
}: {
  label: string;
  value: V;
  onValue: (value: V) => void;
  options: [V, string][];
  hint?: string;
  problem?: string;
}) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        value={value}
        // The browser answers one of the options' values.
        onChange={(event) => onValue(event.currentTarget.value as V)}
        aria-describedby={describedBy(id, hint, undefined, problem)}
        aria-invalid={problem ? true : undefined}
      >
        {options.map(([optionValue, text]) => (
          <option key={optionValue} value={optionValue}>
            {text}
          </option>
        ))}
      </select>
      <Notes id={id} hint={hint} problem={problem} />
    </div>
  );
}

/** A required E.164 phone number. */
export function PhoneField(props: { value: string; onValue: (value: string) => void; placeholder: string; problem: string | undefined }) {
  return (
    <Field
      label="Phone number"
      type="tel"
      inputMode="tel"
      autoComplete="off"
      required
      maxLength={40}
      hint="E.164: + and country code."
      {...props}
    />
  );
}

/** A Select's options for records, after a first choice such as `['', 'All agents']`: the id, and the name or `text`. */
export const namedOptions = <T extends { id: string; name?: string }>(
  items: T[] | undefined,
  first: [string, string],
  text: (item: T) => string = (item) => item.name ?? item.id,
): [string, string][] => [first, ...(items ?? []).map((item): [string, string] => [item.id, text(item)])];

/** A Select's options where each value is its own text. */
export const valueOptions = <V extends string>(values: readonly V[]): [V, string][] => values.map((value) => [value, value]);

interface TextAreaProps {
  label: string;
  value: string;
  onValue: (value: string) => void;
  rows?: number;
  maxLength?: number;
  required?: boolean;
  hint?: string;
  /** A second hint under the first, such as a live character count. */
  note?: ComponentChildren;
  problem?: string;
  /** A fixed id (else one is made up). */
  id?: string;
  /** Classes beside `field` on the wrapper, such as `wide`. */
  class?: string;
}

/** A labelled multi-line input; like Field, `hint`, `note` and `problem` are tied to it. */
export function TextArea({
  label,
  value,
  onValue,
  rows = 4,
  maxLength,
  required,
  hint,
  note,
  problem,
  id: fixedId,
  class: extraClass,
}: TextAreaProps) {
  const madeUpId = useFieldId();
  const id = fixedId ?? madeUpId;
  return (
    <div class={extraClass ? `field ${extraClass}` : 'field'}>
      <label for={id}>{label}</label>
      <textarea
        id={id}
        rows={rows}
        maxLength={maxLength}
        required={required}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-describedby={describedBy(id, hint, note, problem)}
        aria-invalid={problem ? true : undefined}
      />
      <Notes id={id} hint={hint} note={note} problem={problem} />
    </div>
  );
}

export interface Column<T> {
  header: ComponentChildren;
  cell: (row: T) => ComponentChildren;
  /** The class of this column's cells. */
  className?: string;
  /** The class of its header cell. */
  headerClass?: string;
  /** The cell names its row (`<th scope="row">`). */
  rowHeader?: boolean;
}

/** A plain table of rows in its scrolling `.table-wrap`, one header cell and one cell a column. */
export function DataTable<T>({
  rows,
  columns,
  rowKey,
  caption,
  foot,
  wrapClass,
  tableClass,
}: {
  rows: readonly T[];
  columns: Column<T>[];
  rowKey: (row: T) => string | number;
  caption?: ComponentChildren;
  /** The rows of a `<tfoot>`, such as a total. */
  foot?: ComponentChildren;
  wrapClass?: string;
  tableClass?: string;
}) {
  return (
    <div class={wrapClass ? `table-wrap ${wrapClass}` : 'table-wrap'}>
      <table class={tableClass}>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column, index) => (
              <th scope="col" class={column.headerClass} key={index}>
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((column, index) =>
                column.rowHeader ? (
                  <th scope="row" class={column.className} key={index}>
                    {column.cell(row)}
                  </th>
                ) : (
                  <td class={column.className} key={index}>
                    {column.cell(row)}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
        {foot && <tfoot>{foot}</tfoot>}
      </table>
    </div>
  );
}

/** A row's name as a link-like button that opens (or closes again) what the page shows of that row. */
export function OpenButton({
  id,
  open,
  setOpen,
  controls,
  children,
}: {
  id: string;
  open: string | undefined;
  setOpen: (open: string | undefined) => void;
  /** The id of what it opens. */
  controls?: string;
  children: ComponentChildren;
}) {
  return (
    <button
      type="button"
      class="link"
      aria-expanded={open === id}
      aria-controls={controls}
      onClick={() => setOpen(open === id ? undefined : id)}
    >
      {children}
    </button>
  );
}

/** The header of a column of row buttons: named for screen readers, not shown. */
export function ActionsHeader() {
  return <span class="visually-hidden">Actions</span>;
}

/** A form that stays on the page: submitting it runs `onSubmit` (an action's `run`, say) instead of navigating. */
export function Form({ onSubmit, ...props }: Omit<FormHTMLAttributes<HTMLFormElement>, 'onSubmit'> & { onSubmit?: () => unknown }) {
  return (
    <form
      {...props}
      onSubmit={(event) => {
        event.preventDefault();
        void onSubmit?.();
      }}
    />
  );
}

/** A confirmation in a modal <dialog> (focus is trapped and Escape cancels, natively). */
export function Confirm({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useFieldId();
  useEffect(() => {
    if (open && !dialog.current?.open) dialog.current?.showModal();
    if (!open && dialog.current?.open) dialog.current.close();
  }, [open]);
  return (
    <dialog ref={dialog} onClose={onCancel} aria-labelledby={titleId}>
      <h2 id={titleId}>{title}</h2>
      <div>{children}</div>
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function Pagination({ page, limit, total, onPage }: { page: number; limit: number; total: number; onPage: (page: number) => void }) {
  const pages = Math.max(1, Math.ceil(total / limit));
  return (
    <nav class="pagination" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span aria-live="polite">
        Page {page} of {pages} ({total} in all)
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}

export const formatDate = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
/**
 * Money as people read it: to the cent in lists and totals, every one of the API's four
 * fractional digits where `exact` (a call's or an item's own page).
 */
export const formatMoney = (amount: string, currency: string, { exact = false }: { exact?: boolean } = {}) => {
  const value = Number(amount);
  try {
    return new Intl.NumberFormat(undefined, {
      style: 'currency',
      currency,
      minimumFractionDigits: exact ? 4 : 2,
      maximumFractionDigits: exact ? 4 : 2,
    }).format(value);
  } catch {
    return `${amount} ${currency}`;
  }
};

/** "1 contact", "3 contacts": a count with its noun. */
export const plural = (count: number, one: string, many = `${one}s`) => `${count.toLocaleString()} ${count === 1 ? one : many}`;

/** The browser's own time zone, the likeliest one for a person filling a form. */
export const browserTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Every IANA zone the browser knows (with UTC, which some list only as an alias), for a searchable list. */
const allTimeZones = (() => {
  let zones: string[] | undefined;
  return () => (zones ??= ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')]);
})();

/** A time zone input: type to search the browser's list of zones (any IANA name the API knows is accepted). */
export function TimeZoneField({
  label = 'Time zone',
  value,
  onValue,
  hint = 'Type to search, e.g. Berlin or New_York; the call window and days are in its local time.',
  problem,
  required = true,
}: {
  label?: string;
  value: string;
  onValue: (value: string) => void;
  hint?: string;
  problem?: string;
  required?: boolean;
}) {
  const listId = useFieldId();
  return (
    <>
      <Field
        label={label}
        list={listId}
        required={required}
        maxLength={64}
        autoComplete="off"
        value={value}
        onValue={onValue}
        hint={hint}
        problem={problem}
      />
      <datalist id={listId}>
        {allTimeZones().map((zone) => (
          <option key={zone} value={zone} />
        ))}
      </datalist>
    </>
  );
}

/** A state as a coloured badge: its colour from the API's value, its text in words (`label`) or the value itself. */
export function Status({ value, label }: { value: string; label?: string }) {
  return <span class={`status status-${value.toLowerCase().replace(/[^a-z]+/g, '-')}`}>{label ?? value}</span>;
}

export function PageTitle({ children, actions }: { children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <div class="page-title">
      <h1 tabIndex={-1}>{children}</h1>
      {actions && <div class="actions">{actions}</div>}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}
