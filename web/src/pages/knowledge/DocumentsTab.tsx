import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type DragEvent, useId, useRef, useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { formatTime } from '../../ui/format.ts';
import { FilterSelect, SearchFilter } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { formatBytes, useKnowledgeActivity } from './live.ts';
import { uploadForm } from './upload.ts';

type Document = Schemas['Document'];
type Status = Document['status'];
const STATUSES: readonly Status[] = ['processing', 'processed', 'failed'];

/** One file on its way up: its progress, then what the service answered. */
interface Upload {
  key: string;
  name: string;
  size: number;
  progress: number;
  state: 'uploading' | 'stored' | 'duplicate' | 'failed';
  error?: unknown;
}

function UploadBox({ sources }: { sources: Schemas['Source'][] }) {
  const queryClient = useQueryClient();
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [over, setOver] = useState(false);
  const [sourceId, setSourceId] = useState('');
  const [tags, setTags] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const id = useId();
  const counter = useRef(0);

  const patch = (key: string, change: Partial<Upload>) =>
    setUploads((current) => current.map((item) => (item.key === key ? { ...item, ...change } : item)));

  const start = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      counter.current += 1;
      const key = `${counter.current}:${file.name}`;
      setUploads((current) => [
        { key, name: file.name, size: file.size, progress: 0, state: 'uploading' },
        ...current.slice(0, 19),
      ]);
      const form = new FormData();
      if (sourceId) form.append('source_id', sourceId);
      if (tags.trim()) form.append('tags', tags);
      form.append('file', file, file.name);
      uploadForm<Document>('/api/documents/upload', form, (progress) => patch(key, { progress }))
        .then(({ status }) => patch(key, { progress: 1, state: status === 200 ? 'duplicate' : 'stored' }))
        .catch((error: unknown) => patch(key, { state: 'failed', error }))
        .finally(() => {
          void queryClient.invalidateQueries({ queryKey: ['documents'] });
          void queryClient.invalidateQueries({ queryKey: ['sources'] });
        });
    }
  };

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    if (event.dataTransfer.files.length > 0) start(event.dataTransfer.files);
  };

  return (
    <section className="card" aria-labelledby={`${id}-heading`}>
      <h3 id={`${id}-heading`}>Upload documents</h3>
      <div className="row top">
        <div className="field">
          <label htmlFor={`${id}-source`}>Upload to</label>
          <select id={`${id}-source`} value={sourceId} onChange={(event) => setSourceId(event.target.value)}>
            <option value="">The default upload source</option>
            {sources
              .filter((source) => source.kind === 'upload')
              .map((source) => (
                <option key={source.id} value={source.id}>
                  {source.name}
                </option>
              ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-tags`}>Tags</label>
          <input
            id={`${id}-tags`}
            value={tags}
            onChange={(event) => setTags(event.target.value)}
            aria-describedby={`${id}-tags-hint`}
          />
          <div className="hint" id={`${id}-tags-hint`}>
            Comma-separated, given to every file uploaded.
          </div>
        </div>
      </div>
      {/* Dropping files is for pointer users; the labelled file input inside does the same from the keyboard. */}
      <fieldset
        className={`dropzone${over ? ' over' : ''}`}
        onDragOver={(event) => {
          event.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <legend>Drop files here</legend>
        <p className="muted">PDF, Markdown, HTML, text, JSON, CSV or source code. Or choose them:</p>
        <label htmlFor={`${id}-files`}>Files to upload</label>
        <input
          id={`${id}-files`}
          ref={input}
          type="file"
          multiple
          onChange={(event) => {
            if (event.target.files) start(event.target.files);
            event.target.value = '';
          }}
        />
      </fieldset>
      {uploads.length > 0 && (
        <ul className="uploads" aria-label="Uploads">
          {uploads.map((upload) => (
            <li key={upload.key}>
              <div className="spread">
                <span>
                  {upload.name} <span className="muted">{formatBytes(upload.size)}</span>
                </span>
                <span role="status">
                  {upload.state === 'uploading'
                    ? `Uploading ${Math.round(upload.progress * 100)} %`
                    : upload.state === 'stored'
                      ? 'Uploaded, processing'
                      : upload.state === 'duplicate'
                        ? 'Already stored'
                        : 'Failed'}
                </span>
              </div>
              <progress max={1} value={upload.progress} aria-label={`Upload of ${upload.name}`} />
              {upload.error !== undefined && (
                <ProblemAlert error={upload.error} title={`${upload.name} was not stored`} />
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The workspace's documents, their processing state followed live, and uploads. */
export function DocumentsTab() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const list = useListParams(['status', 'source']);
  const status = list.filters.status as Status | '';
  const sourceId = list.filters.source;
  useKnowledgeActivity(['document.'], ['documents']);
  const sources = useQuery({
    queryKey: ['sources', 'all'],
    queryFn: () => unwrap(api.GET('/api/sources', { params: { query: { limit: 100 } } })),
  });
  const documents = useQuery({
    queryKey: ['documents', list.q, status, sourceId, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/documents', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              ...(list.q ? { q: list.q } : {}),
              ...(status ? { status } : {}),
              ...(sourceId ? { source_id: sourceId } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    // The activity feed says when a document is processed; polling covers a dropped feed.
    refetchInterval: (query) =>
      query.state.data?.items.some((document) => document.status === 'processing') ? 2000 : false,
  });
  const remove = useMutation({
    mutationFn: (document: Document) =>
      unwrap(api.DELETE('/api/documents/{id}', { params: { path: { id: document.id } } })),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['documents'] });
      void queryClient.invalidateQueries({ queryKey: ['sources'] });
    },
  });
  const sourceName = new Map(sources.data?.items.map((source) => [source.id, source.name]));

  return (
    <section aria-labelledby="documents-heading">
      <h2 id="documents-heading">Documents</h2>
      {can('member') ? (
        <UploadBox sources={sources.data?.items ?? []} />
      ) : (
        <p className="muted">
          You can read the documents; uploading and deleting them needs the member role.
        </p>
      )}
      <div className="row">
        <SearchFilter
          label="Search documents"
          value={list.q}
          onChange={list.setQ}
          placeholder="Title or file name"
        />
        <FilterSelect label="Status" value={status} onChange={(value) => list.setFilter('status', value)}>
          {STATUSES.map((value) => (
            <option key={value}>{value}</option>
          ))}
        </FilterSelect>
        <FilterSelect label="Source" value={sourceId} onChange={(value) => list.setFilter('source', value)}>
          {sources.data?.items.map((source) => (
            <option key={source.id} value={source.id}>
              {source.name}
            </option>
          ))}
        </FilterSelect>
      </div>
      <ProblemAlert error={remove.error} title="The document was not deleted" />
      <ProblemAlert error={documents.error} />
      {documents.isPending && <Loading what="documents" />}
      {documents.data && documents.data.total === 0 && (
        <Empty>
          {list.q || status || sourceId ? 'No document matches.' : 'No documents yet. Upload one above.'}
        </Empty>
      )}
      {documents.data && documents.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Documents</caption>
            <thead>
              <tr>
                <th scope="col">Title</th>
                <th scope="col">Status</th>
                <th scope="col">Source</th>
                <th scope="col">Chunks</th>
                <th scope="col">Size</th>
                <th scope="col">Tags</th>
                <th scope="col">Updated</th>
                {can('member') && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {documents.data.items.map((document) => (
                <tr key={document.id}>
                  <td>
                    {document.title}
                    <div className="muted small">
                      {document.filename}
                      {document.format ? ` · ${document.format}` : ''}
                    </div>
                  </td>
                  <td>
                    <Badge value={document.status} />
                    {document.failure_reason && <div className="error-text">{document.failure_reason}</div>}
                  </td>
                  <td>{sourceName.get(document.source_id) ?? '—'}</td>
                  <td>{document.chunk_count}</td>
                  <td>{formatBytes(document.size_bytes)}</td>
                  <td>{document.tags.length > 0 ? document.tags.join(', ') : '—'}</td>
                  <td>{formatTime(document.indexed_at ?? document.updated_at)}</td>
                  {can('member') && (
                    <td>
                      <ConfirmButton
                        label={`Delete ${document.title}`}
                        question={`Delete ${document.title}?`}
                        confirmLabel="Delete document"
                        onConfirm={() => remove.mutate(document)}
                      />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {documents.data && (
        <Pager
          label="Documents"
          offset={list.offset}
          limit={list.limit}
          total={documents.data.total}
          onChange={list.setOffset}
        />
      )}
    </section>
  );
}
