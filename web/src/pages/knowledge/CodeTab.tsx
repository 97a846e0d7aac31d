import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { formatBytes, useKnowledgeActivity } from './live.ts';
import { uploadForm } from './upload.ts';

type Project = Schemas['CodeProject'];
const KINDS = ['function', 'class', 'method', 'interface', 'type', 'enum'] as const;
type Kind = (typeof KINDS)[number];
const STATUS_TONE = { ready: 'ok', indexing: 'info', failed: 'bad' } as const;

function ProjectProgress({ project }: { project: Project }) {
  const progress = project.progress;
  return (
    <>
      <Badge value={project.status} tone={STATUS_TONE[project.status]} />
      {progress && (
        <>
          <div className="muted small">
            {progress.phase === 'parsing'
              ? `Parsing: ${progress.files_done} of ${progress.files_total} files`
              : 'Writing the graph'}
          </div>
          <progress
            max={Math.max(1, progress.files_total)}
            value={progress.files_done}
            aria-label={`Indexing ${project.name}`}
          />
        </>
      )}
      {project.error && <div className="error-text">{project.error}</div>}
    </>
  );
}

function IndexProject() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [from, setFrom] = useState<'archive' | 'directory'>('archive');
  const [directory, setDirectory] = useState('');
  const [archive, setArchive] = useState<File>();
  const [sent, setSent] = useState<number>();
  const index = useMutation({
    mutationFn: async () => {
      if (from === 'directory') {
        return unwrap(api.POST('/api/codegraph/index', { body: { project: name, source: { directory } } }));
      }
      const form = new FormData();
      form.append('project', name);
      if (archive) form.append('archive', archive, archive.name);
      setSent(0);
      const { data } = await uploadForm<Project>('/api/codegraph/index', form, setSent);
      return data;
    },
    onSettled: () => {
      setSent(undefined);
      void queryClient.invalidateQueries({ queryKey: ['code-projects'] });
    },
  });
  return (
    <form
      className="card"
      aria-labelledby="index-project-heading"
      onSubmit={(event) => {
        event.preventDefault();
        index.mutate();
      }}
    >
      <h3 id="index-project-heading">Index a project</h3>
      <ProblemAlert error={index.error} title="The project was not indexed" />
      {index.data && (
        <div className="alert info" role="status">
          {index.data.name}: {index.data.status === 'ready' ? 'indexed' : 'indexing in the background'}.
        </div>
      )}
      <Field
        label="Project name"
        operation="indexCodeProject"
        name="project"
        error={index.error}
        hint="Letters, digits, “.”, “_” or “-”; indexing a project again replaces its graph."
      >
        {(props) => (
          <input
            {...props}
            pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,99}"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
        )}
      </Field>
      <fieldset className="choices">
        <legend>Sources from</legend>
        <label>
          <input
            type="radio"
            name="code-from"
            checked={from === 'archive'}
            onChange={() => setFrom('archive')}
          />{' '}
          An archive (.zip, .tar.gz, .tar)
        </label>
        <label>
          <input
            type="radio"
            name="code-from"
            checked={from === 'directory'}
            onChange={() => setFrom('directory')}
          />{' '}
          A directory on the server
        </label>
      </fieldset>
      {from === 'archive' ? (
        <div className="field">
          <label htmlFor="code-archive">Archive</label>
          <input
            id="code-archive"
            type="file"
            required
            accept=".zip,.tar,.tar.gz,.tgz,application/zip,application/gzip,application/x-tar"
            onChange={(event) => setArchive(event.target.files?.[0])}
            aria-invalid={Boolean(
              index.error &&
                (index.error as { fieldError?: (f: string) => string | undefined }).fieldError?.('archive'),
            )}
          />
          {archive && <div className="hint">{formatBytes(archive.size)}</div>}
        </div>
      ) : (
        <Field
          label="Directory"
          operation="indexCodeProject"
          name="source.directory"
          error={index.error}
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
      {sent !== undefined && (
        <progress max={1} value={sent} aria-label="Archive upload">
          {Math.round(sent * 100)} %
        </progress>
      )}
      <button type="submit" className="primary" disabled={index.isPending}>
        Index project
      </button>
    </form>
  );
}

function SearchCode({ projects }: { projects: Project[] }) {
  const [project, setProject] = useState('');
  const [q, setQ] = useState('');
  const [kind, setKind] = useState<Kind | ''>('');
  const chosen = project || projects[0]?.name || '';
  const search = useMutation({
    mutationFn: () =>
      unwrap(
        api.GET('/api/codegraph/search', {
          params: { query: { project: chosen, q, limit: 20, ...(kind ? { kind } : {}) } },
        }),
      ),
  });
  return (
    <section className="section-title" aria-labelledby="code-search-heading">
      <h3 id="code-search-heading">Search symbols</h3>
      <form
        className="row bottom"
        aria-label="Search symbols"
        onSubmit={(event) => {
          event.preventDefault();
          search.mutate();
        }}
      >
        <div className="field">
          <label htmlFor="code-project">Project</label>
          <select id="code-project" value={chosen} onChange={(event) => setProject(event.target.value)}>
            {projects.map((item) => (
              <option key={item.id} value={item.name}>
                {item.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="code-q">Symbol</label>
          <input
            id="code-q"
            type="search"
            required
            maxLength={200}
            value={q}
            onChange={(event) => setQ(event.target.value)}
            placeholder="Name, Class.method or words"
          />
        </div>
        <div className="field">
          <label htmlFor="code-kind">Kind</label>
          <select id="code-kind" value={kind} onChange={(event) => setKind(event.target.value as Kind | '')}>
            <option value="">Any</option>
            {KINDS.map((value) => (
              <option key={value}>{value}</option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={!chosen || search.isPending}>
          Search symbols
        </button>
      </form>
      <ProblemAlert error={search.error} title="The search failed" />
      {search.data && (
        <>
          <p className="muted" role="status">
            {search.data.results.length} symbol(s) in {search.data.project.name}, {search.data.took_ms} ms.
          </p>
          {search.data.results.length === 0 && <Empty>No symbol matches.</Empty>}
          <ol className="stack" aria-label="Symbols">
            {search.data.results.map((hit) => (
              <li key={hit.id} className="card">
                <div className="spread">
                  <h4>
                    <code>{hit.qualified_name}</code> <Badge value={hit.kind} tone="neutral" />
                  </h4>
                  <span className="muted small">
                    {hit.match} match · score {hit.score.toFixed(2)}
                  </span>
                </div>
                <div className="muted small">
                  {hit.file}:{hit.start_line}–{hit.end_line} · {hit.language} · {hit.caller_count} caller(s)
                </div>
                <pre>{hit.signature}</pre>
                {hit.doc && <p>{hit.doc}</p>}
                {(hit.callers.length > 0 || hit.callees.length > 0 || hit.unresolved_callees.length > 0) && (
                  <details>
                    <summary>
                      {hit.callers.length} caller(s), {hit.callees.length} callee(s)
                    </summary>
                    {hit.callers.length > 0 && (
                      <>
                        <div className="muted">Called by</div>
                        <ul>
                          {hit.callers.map((caller) => (
                            <li key={`${caller.symbol_id}:${caller.file}:${caller.line}`}>
                              <code>{caller.qualified_name ?? '(top level)'}</code> {caller.file}:
                              {caller.line}
                            </li>
                          ))}
                        </ul>
                      </>
                    )}
                    {hit.callees.length > 0 && (
                      <>
                        <div className="muted">Calls</div>
                        <ul>
                          {hit.callees.map((callee) => (
                            <li key={`${callee.symbol_id}:${callee.file}:${callee.line}`}>
                              <code>{callee.qualified_name}</code> {callee.file}:{callee.line}
                            </li>
                          ))}
                        </ul>
                      </>
                    )}
                    {hit.unresolved_callees.length > 0 && (
                      <div className="muted small">
                        Outside the project: {hit.unresolved_callees.join(', ')}
                      </div>
                    )}
                  </details>
                )}
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

/** Code graphs: index a project from an archive or a server directory, follow it, search its symbols. */
export function CodeTab() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const list = useListParams();
  useKnowledgeActivity(['codegraph.'], ['code-projects']);
  const projects = useQuery({
    queryKey: ['code-projects', list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/codegraph/projects', { params: { query: { limit: list.limit, offset: list.offset } } }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: (query) =>
      query.state.data?.items.some((project) => project.status === 'indexing') ? 1500 : false,
  });
  const remove = useMutation({
    mutationFn: (name: string) =>
      unwrap(api.DELETE('/api/codegraph/projects/{name}', { params: { path: { name } } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['code-projects'] }),
  });
  const items = projects.data?.items ?? [];
  return (
    <section aria-labelledby="code-heading">
      <h2 id="code-heading">Code</h2>
      {can('member') ? (
        <IndexProject />
      ) : (
        <p className="muted">
          You can search the code projects; indexing and deleting them needs the member role.
        </p>
      )}
      <h3 className="section-title">Projects</h3>
      <ProblemAlert error={remove.error} title="The project was not deleted" />
      <ProblemAlert error={projects.error} />
      {projects.isPending && <Loading what="code projects" />}
      {projects.data && projects.data.total === 0 && <Empty>No code projects yet.</Empty>}
      {items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Code projects</caption>
            <thead>
              <tr>
                <th scope="col">Project</th>
                <th scope="col">Status</th>
                <th scope="col">Source</th>
                <th scope="col">Graph</th>
                <th scope="col">Indexed</th>
                {can('member') && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {items.map((project) => (
                <tr key={project.id}>
                  <td>{project.name}</td>
                  <td>
                    <ProjectProgress project={project} />
                  </td>
                  <td>
                    {project.source.kind === 'directory'
                      ? project.source.directory
                      : `${project.source.filename ?? 'archive'} (${formatBytes(project.source.bytes)})`}
                  </td>
                  <td>
                    {project.stats
                      ? `${project.stats.files} files, ${project.stats.symbols} symbols, ${project.stats.edges.calls} calls`
                      : '—'}
                  </td>
                  <td>{formatTime(project.indexed_at)}</td>
                  {can('member') && (
                    <td>
                      <ConfirmButton
                        label={`Delete ${project.name}`}
                        question={`Delete ${project.name} and its graph?`}
                        confirmLabel="Delete project"
                        onConfirm={() => remove.mutate(project.name)}
                      />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {projects.data && (
        <Pager
          label="Code projects"
          offset={list.offset}
          limit={list.limit}
          total={projects.data.total}
          onChange={list.setOffset}
        />
      )}
      {items.length > 0 && <SearchCode projects={items} />}
    </section>
  );
}
