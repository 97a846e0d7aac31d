import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { FilterSelect, SearchFilter } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { useKnowledgeActivity } from './live.ts';

type Source = Schemas['Source'];
type Kind = Source['kind'];
const KINDS: readonly Kind[] = ['upload', 'directory', 'url'];
const RUNNING = ['queued', 'running'];
const INDEX_TONE: Record<string, 'ok' | 'info' | 'bad' | 'neutral'> = {
  completed: 'ok',
  running: 'info',
  queued: 'neutral',
  idle: 'neutral',
  failed: 'bad',
};

function Progress({ source }: { source: Source }) {
  const run = source.indexing;
  return (
    <>
      <Badge value={run.status} tone={INDEX_TONE[run.status] ?? 'neutral'} />
      {(RUNNING.includes(run.status) || run.documents_total > 0) && (
        <div className="muted small">
          {run.documents_done} of {run.documents_total} documents
          {run.documents_failed > 0 ? `, ${run.documents_failed} failed` : ''}
          {run.finished_at ? ` · ${formatTime(run.finished_at)}` : ''}
        </div>
      )}
      {RUNNING.includes(run.status) && run.documents_total > 0 && (
        <progress
          max={run.documents_total}
          value={run.documents_done + run.documents_failed}
          aria-label={`Indexing ${source.name}`}
        />
      )}
      {run.error && <div className="error-text">{run.error}</div>}
    </>
  );
}

function CreateSource({ onDone }: { onDone: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('upload');
  const [directory, setDirectory] = useState('');
  const [urls, setUrls] = useState('');
  const [embeddingProvider, setEmbeddingProvider] = useState('');
  const [embeddingModel, setEmbeddingModel] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/sources', {
          body: {
            name,
            kind,
            ...(kind === 'directory' ? { directory: { path: directory } } : {}),
            ...(kind === 'url'
              ? {
                  url: {
                    urls: urls
                      .split(/\s+/)
                      .map((line) => line.trim())
                      .filter(Boolean),
                  },
                }
              : {}),
            ...(embeddingProvider || embeddingModel
              ? { embedding: { provider: embeddingProvider, model: embeddingModel } }
              : {}),
          },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['sources'] });
      onDone();
    },
  });
  return (
    <form
      className="card narrow"
      aria-labelledby="new-source-heading"
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <h2 id="new-source-heading">New source</h2>
      <ProblemAlert error={create.error} title="The source was not created" />
      <Field label="Name" operation="createSource" name="name" error={create.error}>
        {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
      </Field>
      <Field
        label="Kind"
        operation="createSource"
        name="kind"
        error={create.error}
        hint="Upload: documents arrive by upload. Directory: a folder on the server. URL: web pages."
      >
        {(props) => (
          <select {...props} value={kind} onChange={(event) => setKind(event.target.value as Kind)}>
            {KINDS.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        )}
      </Field>
      {kind === 'directory' && (
        <Field
          label="Directory"
          operation="createSource"
          name="directory.path"
          error={create.error}
          hint="Relative to this tenant’s folder on the server (SOURCES_ROOT/<tenant id>)."
        >
          {(props) => (
            <input
              {...props}
              required
              value={directory}
              onChange={(event) => setDirectory(event.target.value)}
            />
          )}
        </Field>
      )}
      {kind === 'url' && (
        <Field
          label="URLs"
          operation="createSource"
          name="url.urls"
          error={create.error}
          hint="One http or https address per line; each page is one document."
        >
          {(props) => (
            <textarea {...props} required value={urls} onChange={(event) => setUrls(event.target.value)} />
          )}
        </Field>
      )}
      <fieldset className="choices">
        <legend>Embeddings (optional; the service’s default when left empty)</legend>
        <div className="row top">
          <Field
            label="Embedding provider"
            operation="createSource"
            name="embedding.provider"
            error={create.error}
            hint="none, local, or the id of an OpenAI-compatible provider of the workspace."
          >
            {(props) => (
              <input
                {...props}
                required={Boolean(embeddingModel)}
                value={embeddingProvider}
                onChange={(event) => setEmbeddingProvider(event.target.value)}
              />
            )}
          </Field>
          <Field label="Embedding model" operation="createSource" name="embedding.model" error={create.error}>
            {(props) => (
              <input
                {...props}
                required={Boolean(embeddingProvider)}
                value={embeddingModel}
                onChange={(event) => setEmbeddingModel(event.target.value)}
              />
            )}
          </Field>
        </div>
      </fieldset>
      <div className="row">
        <button type="submit" className="primary" disabled={create.isPending}>
          Create source
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The workspace's sources, with their indexing progress followed live. */
export function SourcesTab() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const list = useListParams(['kind']);
  const kind = list.filters.kind as Kind | '';
  const [creating, setCreating] = useState(false);
  useKnowledgeActivity(['source.', 'document.'], ['sources']);
  const sources = useQuery({
    queryKey: ['sources', list.q, kind, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/sources', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              ...(list.q ? { q: list.q } : {}),
              ...(kind ? { kind } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    // While a run is under way its progress is read every 2 s.
    refetchInterval: (query) =>
      query.state.data?.items.some((source) => RUNNING.includes(source.indexing.status)) ? 2000 : false,
  });
  const action = useMutation({
    mutationFn: ({ source, what }: { source: Source; what: 'index' | 'delete' }) =>
      what === 'index'
        ? unwrap(api.POST('/api/sources/{id}/index', { params: { path: { id: source.id } } }))
        : unwrap(api.DELETE('/api/sources/{id}', { params: { path: { id: source.id } } })),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['sources'] });
      void queryClient.invalidateQueries({ queryKey: ['documents'] });
    },
  });

  return (
    <section aria-labelledby="sources-heading">
      <div className="spread">
        <h2 id="sources-heading">Sources</h2>
        {can('member') && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New source
          </button>
        )}
      </div>
      {!can('member') && (
        <p className="muted">
          You can read the sources; creating, indexing and deleting them needs the member role.
        </p>
      )}
      {creating && <CreateSource onDone={() => setCreating(false)} />}
      <div className="row">
        <SearchFilter label="Search sources" value={list.q} onChange={list.setQ} placeholder="Name" />
        <FilterSelect label="Kind" value={kind} onChange={(value) => list.setFilter('kind', value)}>
          {KINDS.map((value) => (
            <option key={value}>{value}</option>
          ))}
        </FilterSelect>
      </div>
      <ProblemAlert error={action.error} title="The source did not change" />
      <ProblemAlert error={sources.error} />
      {sources.isPending && <Loading what="sources" />}
      {sources.data && sources.data.total === 0 && (
        <Empty>
          {list.q || kind
            ? 'No source matches.'
            : 'No sources yet. Uploads go to a default upload source, created with the first upload.'}
        </Empty>
      )}
      {sources.data && sources.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Sources</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Documents</th>
                <th scope="col">Indexing</th>
                <th scope="col">Embedding</th>
                {can('member') && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {sources.data.items.map((source) => (
                <tr key={source.id}>
                  <td>
                    {source.name}
                    {source.is_default && <div className="muted small">default upload source</div>}
                    {source.directory && <div className="muted small">{source.directory.path}</div>}
                    {source.url && <div className="muted small">{source.url.urls.length} URL(s)</div>}
                  </td>
                  <td>{source.kind}</td>
                  <td>{source.document_count}</td>
                  <td>
                    <Progress source={source} />
                  </td>
                  <td>
                    {source.embedding.provider === 'none'
                      ? 'keywords only'
                      : `${source.embedding.provider} / ${source.embedding.model}`}
                  </td>
                  {can('member') && (
                    <td>
                      <div className="row">
                        <button
                          type="button"
                          disabled={RUNNING.includes(source.indexing.status) || action.isPending}
                          onClick={() => action.mutate({ source, what: 'index' })}
                        >
                          Index<span className="visually-hidden"> {source.name}</span>
                        </button>
                        <ConfirmButton
                          label={`Delete ${source.name}`}
                          question={`Delete ${source.name} and its ${source.document_count} documents?`}
                          confirmLabel="Delete source"
                          onConfirm={() => action.mutate({ source, what: 'delete' })}
                        />
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {sources.data && (
        <Pager
          label="Sources"
          offset={list.offset}
          limit={list.limit}
          total={sources.data.total}
          onChange={list.setOffset}
        />
      )}
    </section>
  );
}
