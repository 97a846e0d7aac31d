import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { formatTime } from '../../ui/format.ts';
import { isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { AbTest } from './AbTest.tsx';
import { AssemblePreview } from './AssemblePreview.tsx';
import { type PolicyContent, usePolicy } from './policy-query.ts';
import { VersionDiff } from './VersionDiff.tsx';

const STARTER: PolicyContent = {
  description: 'What this policy is for',
  sections: [
    { name: 'persona', kind: 'persona', text: 'You are a careful assistant.' },
    { name: 'rules', kind: 'rules', text: 'Answer {{customer}} in plain words.' },
  ],
  variables: { customer: { required: false, default: 'the customer' } },
};

/** `/policies/:id`: a version, its labels and history, a new version, a diff, the assembly, the A/B test. */
export default function PolicyPage() {
  const { id = '' } = useParams();
  const { can } = useWorkspace();
  const [search, setSearch] = useSearchParams();
  const version = Number(search.get('version')) || undefined;
  const policy = usePolicy(id, version);

  if (policy.isPending) return <Loading what="the policy" />;
  if (isNotFound(policy.error) && !version) {
    return (
      <>
        <h1>Policy {id}</h1>
        <p>
          No policy <code>{id}</code> in this workspace yet. <Link to="/policies">All policies</Link>
        </p>
        {can('admin') ? (
          <PolicyEditor id={id} content={STARTER} />
        ) : (
          <p className="alert info">Creating a policy needs the admin role.</p>
        )}
      </>
    );
  }
  if (!policy.data) return <ProblemAlert error={policy.error} />;
  const p = policy.data;
  const latest = p.labels.latest ?? p.version;
  const showVersion = (n: number | undefined) =>
    setSearch((current) => {
      const next = new URLSearchParams(current);
      if (n === undefined) next.delete('version');
      else next.set('version', String(n));
      return next;
    });
  return (
    <>
      <h1>
        Policy {p.policy_id} <span className="muted">version {p.version}</span>
      </h1>
      <p className="row">
        <span className="muted">Labels:</span>
        {Object.entries(p.labels).map(([label, at]) => (
          <Badge key={label} value={`${label} → v${at}`} tone={label === 'production' ? 'ok' : 'neutral'} />
        ))}
      </p>
      {p.content.description && <p>{p.content.description}</p>}
      {!can('admin') && (
        <p className="alert info">
          You can read and assemble this policy; writing versions needs the admin role.
        </p>
      )}
      <section className="card" aria-labelledby="policy-versions">
        <h2 id="policy-versions">Versions</h2>
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Versions, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Labels</th>
                <th scope="col">Content hash</th>
                <th scope="col">Written by</th>
                <th scope="col">Written</th>
              </tr>
            </thead>
            <tbody>
              {p.versions.map((v) => (
                <tr key={v.version} aria-current={v.version === p.version ? 'true' : undefined}>
                  <td>
                    {v.version === p.version ? (
                      <strong>Version {v.version} (shown)</strong>
                    ) : (
                      <button type="button" className="link" onClick={() => showVersion(v.version)}>
                        Show version {v.version}
                      </button>
                    )}
                  </td>
                  <td>{v.labels.join(', ') || '—'}</td>
                  <td>
                    <code>{v.content_hash.slice(0, 12)}</code>
                  </td>
                  <td>{v.created_by}</td>
                  <td>{formatTime(v.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      {/* An admin reads the content in the editor, which starts from the shown version. */}
      {!can('admin') && (
        <section className="card" aria-labelledby="policy-content">
          <h2 id="policy-content">Content of version {p.version}</h2>
          <pre>{JSON.stringify(p.content, null, 2)}</pre>
        </section>
      )}
      {can('admin') && (
        <PolicyEditor key={`editor-${p.version}`} id={p.policy_id} content={p.content} latest={latest} />
      )}
      <VersionDiff key={`diff-${latest}`} id={p.policy_id} versions={p.versions.map((v) => v.version)} />
      <AssemblePreview key={`assemble-${p.version}`} policy={p} />
      <AbTest policy={p} />
    </>
  );
}

/** Writes a new version: the whole content as JSON, and the labels to move to it. */
function PolicyEditor({ id, content, latest }: { id: string; content: PolicyContent; latest?: number }) {
  const queryClient = useQueryClient();
  const [, setSearch] = useSearchParams();
  const fieldId = useId();
  const [text, setText] = useState(() => JSON.stringify(content, null, 2));
  const [labels, setLabels] = useState('');
  const [parseError, setParseError] = useState<string>();
  const save = useMutation({
    mutationFn: (body: PolicyContent & { labels?: string[] }) =>
      unwrap(
        api.PUT('/api/policy/{policy_id}', {
          params: {
            path: { policy_id: id },
            ...(latest !== undefined ? { header: { 'if-match': `"${latest}"` } } : {}),
          },
          body,
        }),
      ),
    onSuccess: (saved) => {
      queryClient.setQueryData(['policy', id, saved.version], saved);
      void queryClient.invalidateQueries({ queryKey: ['policy', id] });
      void queryClient.invalidateQueries({ queryKey: ['policies'] });
      // The new version is shown (production may still point at an older one).
      setSearch(new URLSearchParams({ version: String(saved.version) }));
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      setParseError(`Not valid JSON: ${(error as Error).message}`);
      return;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      setParseError('The content is a JSON object with at least "sections".');
      return;
    }
    setParseError(undefined);
    const moved = labels
      .split(',')
      .map((label) => label.trim())
      .filter(Boolean);
    const { labels: _ignored, ...body } = parsed as PolicyContent & { labels?: unknown };
    save.mutate({ ...body, ...(moved.length ? { labels: moved } : {}) });
  };
  return (
    <section className="card" aria-labelledby={`${fieldId}-heading`}>
      <h2 id={`${fieldId}-heading`}>{latest === undefined ? 'Create the policy' : 'Write a new version'}</h2>
      <form onSubmit={submit}>
        <ProblemAlert error={save.error} title="The version was not written" />
        <div className="field">
          <label htmlFor={`${fieldId}-content`}>Policy content (JSON)</label>
          <textarea
            id={`${fieldId}-content`}
            className="code"
            rows={16}
            spellCheck={false}
            value={text}
            onChange={(event) => setText(event.target.value)}
            aria-invalid={Boolean(parseError)}
            aria-describedby={`${fieldId}-content-hint${parseError ? ` ${fieldId}-content-error` : ''}`}
          />
          <div className="hint" id={`${fieldId}-content-hint`}>
            Sections (name, kind, text, optional role, when, required), variables, model, tools, retrieval,
            playbooks, token_budget: docs/policies.md.
          </div>
          {parseError && (
            <div className="error" id={`${fieldId}-content-error`}>
              {parseError}
            </div>
          )}
        </div>
        <div className="field">
          <label htmlFor={`${fieldId}-labels`}>Labels to move to the new version</label>
          <input
            id={`${fieldId}-labels`}
            value={labels}
            onChange={(event) => setLabels(event.target.value)}
            placeholder="production"
            aria-describedby={`${fieldId}-labels-hint`}
          />
          <div className="hint" id={`${fieldId}-labels-hint`}>
            Comma-separated; latest always moves.
          </div>
        </div>
        <button type="submit" className="primary" disabled={save.isPending}>
          {latest === undefined ? 'Create policy' : 'Write version'}
        </button>
        {save.data && <p role="status">Version {save.data.version} written.</p>}
      </form>
    </section>
  );
}
