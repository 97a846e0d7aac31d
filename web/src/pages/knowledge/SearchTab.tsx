import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { Field } from '../../ui/Field.tsx';
import { Empty, ProblemAlert } from '../../ui/states.tsx';

type Mode = 'hybrid' | 'keyword' | 'vector';
interface SearchInput {
  query: string;
  top_k: number;
  mode?: Mode;
  tags?: string[];
  source_ids?: string[];
}

const search = (body: SearchInput) => unwrap(api.POST('/api/documents/search', { body }));

/** A score with `digits` decimals; — when the arm did not find the document or did not run. */
const score = (value: number | null, digits = 3) => (value === null ? '—' : value.toFixed(digits));

/** Searching the workspace's documents: each hit's passage, score parts, source and tags. */
export function SearchTab() {
  const [query, setQuery] = useState('');
  const [mode, setMode] = useState<Mode | ''>('');
  const [topK, setTopK] = useState(10);
  const [tags, setTags] = useState('');
  const [sourceId, setSourceId] = useState('');
  const sources = useQuery({
    queryKey: ['sources', 'all'],
    queryFn: () => unwrap(api.GET('/api/sources', { params: { query: { limit: 100 } } })),
  });
  const run = useMutation({
    mutationFn: () => {
      const tagList = tags
        .split(',')
        .map((tag) => tag.trim())
        .filter(Boolean);
      return search({
        query,
        top_k: topK,
        ...(mode ? { mode } : {}),
        ...(tagList.length > 0 ? { tags: [...new Set(tagList)] } : {}),
        ...(sourceId ? { source_ids: [sourceId] } : {}),
      });
    },
  });
  const answer = run.data;

  return (
    <section aria-labelledby="search-heading">
      <h2 id="search-heading">Search</h2>
      <form
        className="card"
        aria-label="Search documents"
        onSubmit={(event) => {
          event.preventDefault();
          run.mutate();
        }}
      >
        <Field label="Query" operation="searchDocuments" name="query" error={run.error}>
          {(props) => (
            <input
              {...props}
              type="search"
              value={query}
              onChange={(event) => setQuery(event.target.value)}
            />
          )}
        </Field>
        <div className="row top">
          <Field
            label="Mode"
            operation="searchDocuments"
            name="mode"
            error={run.error}
            hint="Default: hybrid when the sources have embeddings, else keyword."
          >
            {(props) => (
              <select {...props} value={mode} onChange={(event) => setMode(event.target.value as Mode | '')}>
                <option value="">Default</option>
                <option value="hybrid">hybrid</option>
                <option value="keyword">keyword</option>
                <option value="vector">vector</option>
              </select>
            )}
          </Field>
          <Field label="Results" operation="searchDocuments" name="top_k" error={run.error}>
            {(props) => (
              <input
                {...props}
                type="number"
                value={topK}
                onChange={(event) => setTopK(Number(event.target.value) || 1)}
              />
            )}
          </Field>
          <Field
            label="Tags"
            operation="searchDocuments"
            name="tags"
            error={run.error}
            hint="Comma-separated; any of them."
          >
            {(props) => <input {...props} value={tags} onChange={(event) => setTags(event.target.value)} />}
          </Field>
          <div className="field">
            <label htmlFor="search-source">Source</label>
            <select id="search-source" value={sourceId} onChange={(event) => setSourceId(event.target.value)}>
              <option value="">All sources</option>
              {sources.data?.items.map((source) => (
                <option key={source.id} value={source.id}>
                  {source.name}
                </option>
              ))}
            </select>
          </div>
        </div>
        <button type="submit" className="primary" disabled={run.isPending}>
          Search
        </button>
      </form>
      <ProblemAlert error={run.error} title="The search failed" />
      {run.isPending && (
        <p className="muted" role="status">
          Searching…
        </p>
      )}
      {answer && (
        <>
          <p className="muted" role="status">
            {answer.results.length} result(s), {answer.mode} search
            {answer.exact ? '' : ' (approximate keyword ranking)'}, {answer.took_ms} ms.
          </p>
          {answer.results.length === 0 && <Empty>Nothing matches. Try other words or fewer filters.</Empty>}
          <ol className="stack search-results" aria-label="Search results">
            {answer.results.map((hit) => (
              <li key={hit.document.id} className="card">
                <article aria-labelledby={`hit-${hit.document.id}`}>
                  <h3 id={`hit-${hit.document.id}`}>{hit.document.title}</h3>
                  <div className="muted small">
                    {hit.document.source.name} · {hit.document.filename}
                    {hit.document.tags.length > 0 ? ` · tags: ${hit.document.tags.join(', ')}` : ''}
                  </div>
                  <dl className="facts scores">
                    <dt>Score ({answer.mode})</dt>
                    <dd>{score(hit.score, 4)}</dd>
                    <dt>Keyword (BM25)</dt>
                    <dd>{score(hit.scores.keyword)}</dd>
                    <dt>Vector (cosine)</dt>
                    <dd>{score(hit.scores.vector)}</dd>
                  </dl>
                  {hit.chunk.heading_path.length > 0 && (
                    <div className="muted small">{hit.chunk.heading_path.join(' › ')}</div>
                  )}
                  <blockquote>{hit.chunk.text}</blockquote>
                  {hit.highlights.length > 0 && (
                    <details>
                      <summary>{hit.highlights.length} more passage(s)</summary>
                      {hit.highlights.map((highlight) => (
                        <blockquote key={highlight.chunk_id}>
                          {highlight.heading_path.length > 0 && (
                            <div className="muted small">{highlight.heading_path.join(' › ')}</div>
                          )}
                          {highlight.text} <span className="muted">({score(highlight.score)})</span>
                        </blockquote>
                      ))}
                    </details>
                  )}
                </article>
              </li>
            ))}
          </ol>
        </>
      )}
      {!answer && !run.isPending && !run.error && (
        <Empty>Search the documents of every source by words or meaning.</Empty>
      )}
    </section>
  );
}
