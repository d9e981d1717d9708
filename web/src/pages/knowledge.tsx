import './knowledge.css';
import type { CreateBaseBody, KnowledgeBase, KnowledgeSource, QueryBody, QueryResult } from '../../../src/api-types.ts';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, query, upload, type Page } from '../api.ts';
import { matchStrength } from '../words.ts';
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
  Select,
  Status,
  TextArea,
  useAction,
  useLoad,
} from '../ui.tsx';

// The service's limits (src/modules/knowledge/schemas.ts).
const TOP_K_DEFAULT = 5;
const TOP_K_MAX = 50;
const FILE_TYPES = '.pdf,.docx,.txt,.md,.html';
const FILE_LIMIT_MB = 10;
const PER_PAGE = 50;
const POLL_MS = 2000;

/** Knowledge bases: create one, list them with their sizes, delete one no agent searches. */
export function KnowledgeBasesPage(_props: { params: Record<string, string> }) {
  const [page, setPage] = useState(1);
  const bases = useLoad(() => api<Page<KnowledgeBase>>('GET', `/knowledge-bases${query({ page, limit: PER_PAGE })}`), [page]);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [deleting, setDeleting] = useState<KnowledgeBase | undefined>(undefined);
  const listHeading = useRef<HTMLHeadingElement>(null);

  const create = useAction(async () => {
    await api('POST', '/knowledge-bases', {
      name: name.trim(),
      ...(description.trim() ? { description: description.trim() } : {}),
    } satisfies CreateBaseBody);
    setName('');
    setDescription('');
    await bases.reload();
  });
  const remove = useAction(async (base: KnowledgeBase) => {
    await api('DELETE', `/knowledge-bases/${base.id}`);
    setDeleting(undefined);
    await bases.reload();
    // Its row, which held the focus, is gone.
    listHeading.current?.focus();
  });

  return (
    <>
      <PageTitle>Knowledge bases</PageTitle>
      <p class="hint">
        Agents search the knowledge bases they are given during calls. Add text, web pages or documents to a base, then try a query to see
        what an agent would find.
      </p>
      <section aria-labelledby="create-base-title">
        <h2 id="create-base-title">Create a knowledge base</h2>
        <Form class="grid-form" onSubmit={create.run}>
          <Field
            label="Name"
            value={name}
            onValue={setName}
            required
            maxLength={200}
            hint="Unique in your account."
            problem={fieldErrorOf(create.error, '/name')}
          />
          <Field
            label="Description (optional)"
            value={description}
            onValue={setDescription}
            maxLength={2000}
            problem={fieldErrorOf(create.error, '/description')}
          />
          <ErrorMessage error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create knowledge base
          </button>
        </Form>
      </section>
      <section aria-labelledby="bases-title">
        <h2 id="bases-title" ref={listHeading} tabIndex={-1}>
          Knowledge bases
        </h2>
        <ErrorMessage error={bases.error} />
        {bases.data && bases.data.data.length === 0 && <Empty>No knowledge bases yet.</Empty>}
        {bases.data && bases.data.data.length > 0 && (
          <>
            <DataTable
              rows={bases.data.data}
              rowKey={(base) => base.id}
              columns={[
                { header: 'Name', cell: (base) => <a href={`#/knowledge/${base.id}`}>{base.name}</a> },
                { header: 'Description', cell: (base) => base.description ?? '—' },
                { header: 'Sources', cell: (base) => base.sourceCount },
                { header: 'Chunks', cell: (base) => base.chunkCount },
                { header: 'Created', cell: (base) => formatDate(base.createdAt) },
                {
                  header: <ActionsHeader />,
                  cell: (base) => (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => (remove.clearError(), setDeleting(base))}
                      aria-label={`Delete ${base.name}`}
                    >
                      Delete
                    </button>
                  ),
                },
              ]}
            />
            {bases.data.total > PER_PAGE && <Pagination page={page} limit={PER_PAGE} total={bases.data.total} onPage={setPage} />}
          </>
        )}
      </section>
      <Confirm
        open={!!deleting}
        title="Delete this knowledge base?"
        confirmLabel="Delete knowledge base"
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => void remove.run(deleting!)}
      >
        <p>
          “{deleting?.name}” and its {deleting?.sourceCount} sources are deleted for good. A knowledge base an agent still searches cannot
          be deleted.
        </p>
        <ErrorMessage error={remove.error} />
      </Confirm>
    </>
  );
}

/** One knowledge base: add sources, watch them being processed, and try a query. */
export function KnowledgeBasePage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  const base = useLoad(() => api<KnowledgeBase>('GET', `/knowledge-bases/${id}`), [id]);
  return (
    <>
      <p class="knowledge-back">
        <a href="#/knowledge">← All knowledge bases</a>
      </p>
      <PageTitle>{base.data?.name ?? 'Knowledge base'}</PageTitle>
      <ErrorMessage error={base.error} />
      {base.data && (
        <>
          {base.data.description && <p>{base.data.description}</p>}
          <p class="hint">
            {base.data.sourceCount} {base.data.sourceCount === 1 ? 'source' : 'sources'}, {base.data.chunkCount} searchable{' '}
            {base.data.chunkCount === 1 ? 'chunk' : 'chunks'}.
          </p>
          <Sources baseId={id} onChange={() => void base.reload()} />
          <TryQuery baseId={id} />
        </>
      )}
    </>
  );
}

function AddSource({ baseId, onAdded }: { baseId: string; onAdded: () => void }) {
  const [sourceType, setSourceType] = useState<KnowledgeSource['sourceType']>('text');
  const [sourceName, setSourceName] = useState('');
  const [rawText, setRawText] = useState('');
  const [url, setUrl] = useState('');
  const [file, setFile] = useState<File | undefined>(undefined);
  const [progress, setProgress] = useState<number | undefined>(undefined);
  const fileInput = useRef<HTMLInputElement>(null);

  const add = useAction(async () => {
    const path = `/knowledge-bases/${baseId}/sources`;
    if (sourceType === 'file') {
      const form = new FormData();
      form.append('sourceType', 'file');
      form.append('sourceName', sourceName.trim());
      form.append('file', file!);
      setProgress(0);
      try {
        await upload(path, form, setProgress);
      } finally {
        setProgress(undefined);
      }
      setFile(undefined);
      if (fileInput.current) fileInput.current.value = '';
    } else {
      await api(
        'POST',
        path,
        sourceType === 'text'
          ? { sourceType, sourceName: sourceName.trim(), rawText }
          : { sourceType, sourceName: sourceName.trim(), url: url.trim() },
      );
      setRawText('');
      setUrl('');
    }
    setSourceName('');
    onAdded();
  });

  return (
    <section aria-labelledby="add-source-title">
      <h2 id="add-source-title">Add a source</h2>
      <Form class="grid-form" onSubmit={add.run}>
        <Select
          label="Type"
          value={sourceType}
          onValue={(value) => setSourceType(value as KnowledgeSource['sourceType'])}
          options={[
            ['text', 'Text'],
            ['url', 'Web page or document URL'],
            ['file', 'File upload'],
          ]}
        />
        <Field
          label="Source name"
          value={sourceName}
          onValue={setSourceName}
          required
          maxLength={200}
          hint="A title, shown with search results."
          problem={fieldErrorOf(add.error, '/sourceName')}
        />
        {sourceType === 'text' && (
          <TextArea
            id="source-raw-text"
            class="wide full"
            label="Text"
            rows={18}
            required
            value={rawText}
            onValue={setRawText}
            problem={fieldErrorOf(add.error, '/rawText')}
          />
        )}
        {sourceType === 'url' && (
          <Field
            label="URL"
            type="url"
            value={url}
            onValue={setUrl}
            required
            maxLength={2048}
            placeholder="https://example.com/faq"
            hint="An http(s) page or document (HTML, text, Markdown, PDF, DOCX); it is fetched and indexed."
            problem={fieldErrorOf(add.error, '/url')}
          />
        )}
        {sourceType === 'file' && (
          <div class="field">
            <label for="source-file">File</label>
            <input
              id="source-file"
              ref={fileInput}
              type="file"
              accept={FILE_TYPES}
              required
              onChange={(event) => setFile(event.currentTarget.files?.[0])}
              aria-describedby="source-file-hint"
            />
            <small id="source-file-hint" class="hint">
              PDF, DOCX, TXT, Markdown or HTML, up to {FILE_LIMIT_MB} MB.
            </small>
          </div>
        )}
        {progress !== undefined && (
          <div class="field wide">
            <label for="source-upload-progress">Uploading</label>
            <progress id="source-upload-progress" max={1} value={progress}>
              {Math.round(progress * 100)}%
            </progress>
          </div>
        )}
        <ErrorMessage error={add.error} />
        <button type="submit" class="primary" disabled={add.busy}>
          Add source
        </button>
      </Form>
    </section>
  );
}

/** "FAQ is ready (12 chunks)." for every source whose status changed since the last load. */
function statusChanges(before: Map<string, string>, sources: KnowledgeSource[]): string {
  return sources
    .filter((source) => before.has(source.id) && before.get(source.id) !== source.status)
    .map((source) =>
      source.status === 'READY'
        ? `${source.sourceName} is ready (${source.chunkCount} ${source.chunkCount === 1 ? 'chunk' : 'chunks'}).`
        : source.status === 'FAILED'
          ? `${source.sourceName} failed: ${source.error ?? 'no reason given'}`
          : `${source.sourceName} is processing.`,
    )
    .join(' ');
}

function Sources({ baseId, onChange }: { baseId: string; onChange: () => void }) {
  const [page, setPage] = useState(1);
  const [polling, setPolling] = useState(false);
  const [announcement, setAnnouncement] = useState('');
  const [deleting, setDeleting] = useState<KnowledgeSource | undefined>(undefined);
  const lastStatuses = useRef(new Map<string, string>());
  const listHeading = useRef<HTMLHeadingElement>(null);
  const sources = useLoad(
    () => api<Page<KnowledgeSource>>('GET', `/knowledge-bases/${baseId}/sources${query({ page, limit: PER_PAGE })}`),
    [baseId, page],
    polling ? POLL_MS : undefined,
  );

  useEffect(() => {
    const list = sources.data?.data;
    if (!list) return;
    const changes = statusChanges(lastStatuses.current, list);
    if (changes) {
      setAnnouncement(changes);
      onChange();
    }
    lastStatuses.current = new Map(list.map((source) => [source.id, source.status]));
    setPolling(list.some((source) => source.status === 'PROCESSING'));
  }, [sources.data]);

  const changed = async () => {
    await sources.reload();
    onChange();
  };
  const refresh = useAction(async (source: KnowledgeSource) => {
    await api('POST', `/knowledge-bases/${baseId}/sources/${source.id}/refresh`);
    await changed();
  });
  const remove = useAction(async (source: KnowledgeSource) => {
    await api('DELETE', `/knowledge-bases/${baseId}/sources/${source.id}`);
    setDeleting(undefined);
    await changed();
    // Its row, which held the focus, is gone.
    listHeading.current?.focus();
  });

  return (
    <>
      <AddSource baseId={baseId} onAdded={() => void changed()} />
      <section aria-labelledby="sources-title">
        <h2 id="sources-title" ref={listHeading} tabIndex={-1}>
          Sources
        </h2>
        <p class="visually-hidden" aria-live="polite">
          {announcement}
        </p>
        {polling && <p class="hint">Sources are being processed; this list updates every {POLL_MS / 1000} seconds.</p>}
        <ErrorMessage error={sources.error ?? refresh.error} />
        {sources.data && sources.data.data.length === 0 && <Empty>No sources yet: add one above.</Empty>}
        {sources.data && sources.data.data.length > 0 && (
          <>
            <DataTable
              rows={sources.data.data}
              rowKey={(source) => source.id}
              columns={[
                { header: 'Name', cell: (source) => source.sourceName },
                { header: 'Type', className: 'knowledge-origin', cell: (source) => <SourceOrigin source={source} /> },
                {
                  header: 'Status',
                  cell: (source) => (
                    <>
                      <Status value={source.status} />
                      {source.status === 'FAILED' && source.error && <small class="problem knowledge-source-error">{source.error}</small>}
                    </>
                  ),
                },
                { header: 'Chunks', cell: (source) => (source.status === 'READY' ? source.chunkCount : '—') },
                { header: 'Processed', cell: (source) => formatDate(source.processedAt) },
                {
                  header: <ActionsHeader />,
                  cell: (source) => (
                    <div class="actions knowledge-source-actions">
                      <button
                        type="button"
                        disabled={refresh.busy || source.status === 'PROCESSING'}
                        onClick={() => void refresh.run(source)}
                        aria-label={`Process ${source.sourceName} again`}
                      >
                        Refresh
                      </button>
                      <button
                        type="button"
                        class="danger"
                        onClick={() => (remove.clearError(), setDeleting(source))}
                        aria-label={`Delete ${source.sourceName}`}
                      >
                        Delete
                      </button>
                    </div>
                  ),
                },
              ]}
            />
            {sources.data.total > PER_PAGE && <Pagination page={page} limit={PER_PAGE} total={sources.data.total} onPage={setPage} />}
          </>
        )}
      </section>
      <Confirm
        open={!!deleting}
        title="Delete this source?"
        confirmLabel="Delete source"
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => void remove.run(deleting!)}
      >
        <p>“{deleting?.sourceName}” and its chunks are deleted; agents stop finding its text.</p>
        <ErrorMessage error={remove.error} />
      </Confirm>
    </>
  );
}

function SourceOrigin({ source }: { source: KnowledgeSource }) {
  if (source.sourceType === 'url' && source.url) {
    return (
      <>
        URL:{' '}
        <a href={source.url} target="_blank" rel="noopener noreferrer" class="knowledge-source-url">
          {source.url}
        </a>
      </>
    );
  }
  if (source.sourceType === 'file') return <>File: {source.fileName ?? '—'}</>;
  return <>Text</>;
}

/** A result's score in words, with the score itself (words.ts says what it means). */
function Relevance({ score }: { score: number }) {
  const { words, detail } = matchStrength(score);
  return (
    <span
      class={`relevance relevance-${words.split(' ')[0]!.toLowerCase()}`}
      title="Strong: both rankings, by words and by meaning, put it near the top. Partial: one of them only, or both lower down."
    >
      {words} · {detail}
    </span>
  );
}

function TryQuery({ baseId }: { baseId: string }) {
  const [text, setText] = useState('');
  const [topK, setTopK] = useState(String(TOP_K_DEFAULT));
  const [answer, setAnswer] = useState<QueryResult | undefined>(undefined);
  const search = useAction(async () => {
    setAnswer(await api<QueryResult>('POST', `/knowledge-bases/${baseId}/query`, { query: text, topK: Number(topK) } satisfies QueryBody));
  });
  return (
    <section aria-labelledby="try-query-title">
      <h2 id="try-query-title">Try a query</h2>
      <Form class="grid-form" role="search" onSubmit={search.run}>
        <Field
          label="Query"
          type="search"
          value={text}
          onValue={setText}
          required
          maxLength={2000}
          hint="What a caller might ask, in plain words."
          problem={fieldErrorOf(search.error, '/query')}
        />
        <Field
          label="Results wanted"
          type="number"
          inputMode="numeric"
          value={topK}
          onValue={setTopK}
          required
          min={1}
          max={TOP_K_MAX}
          step={1}
          hint={`1 to ${TOP_K_MAX}.`}
          problem={fieldErrorOf(search.error, '/topK')}
        />
        <ErrorMessage error={search.error} />
        <button type="submit" class="primary" disabled={search.busy}>
          Search
        </button>
      </Form>
      <div aria-live="polite">
        {answer && answer.results.length === 0 && <Empty>Nothing in this knowledge base matches that query.</Empty>}
        {answer && answer.results.length > 0 && (
          <>
            <h3>
              {answer.results.length} {answer.results.length === 1 ? 'result' : 'results'}
            </h3>
            <ol class="knowledge-results">
              {answer.results.map((result) => (
                <li key={result.chunkId} class="card">
                  <p class="knowledge-result-head">
                    <span class="hint">From</span> <strong>{result.sourceName}</strong> <Relevance score={result.score} />
                  </p>
                  <p class="knowledge-result-text">{result.text}</p>
                </li>
              ))}
            </ol>
          </>
        )}
      </div>
    </section>
  );
}
