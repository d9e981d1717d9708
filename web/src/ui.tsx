import type { ComponentChildren } from 'preact';
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
  value: string;
  onValue: (value: string) => void;
  hint?: string;
  problem?: string;
}

/** A labelled input; `hint` and `problem` are tied to it for assistive technology. */
export function Field({ label, value, onValue, hint, problem, ...rest }: InputProps) {
  const id = useFieldId();
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} value={value} onInput={(event) => onValue(event.currentTarget.value)} aria-describedby={described} aria-invalid={problem ? true : undefined} {...(rest as Record<string, unknown>)} />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {problem && (
        <small id={`${id}-problem`} class="problem">
          {problem}
        </small>
      )}
    </div>
  );
}

export function Select({ label, value, onValue, options, hint }: { label: string; value: string; onValue: (value: string) => void; options: [string, string][]; hint?: string }) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(event) => onValue(event.currentTarget.value)} aria-describedby={hint ? `${id}-hint` : undefined}>
        {options.map(([optionValue, text]) => (
          <option key={optionValue} value={optionValue}>
            {text}
          </option>
        ))}
      </select>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

export function TextArea({ label, value, onValue, rows = 4, hint }: { label: string; value: string; onValue: (value: string) => void; rows?: number; hint?: string }) {
  const id = useFieldId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea id={id} rows={rows} value={value} onInput={(event) => onValue(event.currentTarget.value)} aria-describedby={hint ? `${id}-hint` : undefined} />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** A confirmation in a modal <dialog> (focus is trapped and Escape cancels, natively). */
export function Confirm({ open, title, children, confirmLabel, onConfirm, onCancel }: { open: boolean; title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void }) {
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
export const formatMoney = (amount: string, currency: string) => {
  const value = Number(amount);
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 4 }).format(value);
  } catch {
    return `${amount} ${currency}`;
  }
};

export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.toLowerCase().replace(/[^a-z]+/g, '-')}`}>{value}</span>;
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
