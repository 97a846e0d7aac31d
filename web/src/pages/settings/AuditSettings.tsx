import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ApiError, api, apiFetch, type Problem, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { formatNumber, formatTime, fromLocalInput, splitList } from '../../ui/format.ts';
import { Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

export function AuditSettings() {
  const { can } = useWorkspace();
  return (
    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit trail</h2>
      {can('admin') ? (
        <>
          <AuditInfo />
          <AuditExport />
        </>
      ) : (
        <ReadOnly needs="the admin role (the audit trail is read by admins only)" />
      )}
    </section>
  );
}

function AuditInfo() {
  const info = useQuery({
    queryKey: ['audit-info'],
    queryFn: () => unwrap(api.GET('/api/settings/audit/info')),
  });
  if (info.isPending) return <Loading what="the audit summary" />;
  if (!info.data) return <ProblemAlert error={info.error} />;
  const d = info.data;
  const actions = Object.entries(d.by_action as Record<string, number>).sort(([, a], [, b]) => b - a);
  return (
    <div className="grid">
      <section className="card" aria-labelledby="audit-summary">
        <h3 id="audit-summary">Summary</h3>
        <dl className="facts">
          <dt>Records</dt>
          <dd>{formatNumber(d.total)}</dd>
          <dt>Oldest</dt>
          <dd>{formatTime(d.oldest_at)}</dd>
          <dt>Newest</dt>
          <dd>{formatTime(d.newest_at)}</dd>
          <dt>Retention</dt>
          <dd>{d.retention.description}</dd>
          <dt>Hash chain</dt>
          <dd>
            <Badge value={d.chain.verified ? 'verified' : 'broken'} tone={d.chain.verified ? 'ok' : 'bad'} />{' '}
            <span className="muted">
              {formatNumber(d.chain.checked)} checked
              {d.chain.first_broken_id !== undefined
                ? `; first broken record ${d.chain.first_broken_id}`
                : ''}
              {d.chain.reason ? ` (${d.chain.reason})` : ''}
            </span>
          </dd>
        </dl>
      </section>
      <section className="card" aria-labelledby="audit-actions">
        <h3 id="audit-actions">Records by action</h3>
        {actions.length === 0 ? (
          <p className="muted">No records yet.</p>
        ) : (
          <table>
            <caption className="visually-hidden">Audit records by action</caption>
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Records</th>
              </tr>
            </thead>
            <tbody>
              {actions.map(([action, count]) => (
                <tr key={action}>
                  <th scope="row">
                    <code>{action}</code>
                  </th>
                  <td>{formatNumber(count)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}

const EXTENSIONS = { jsonl: 'jsonl', csv: 'csv', ocsf: 'jsonl' } as const;

/** Streams the export from the API and hands it to the browser as a file download. */
function AuditExport() {
  const [format, setFormat] = useState<'jsonl' | 'csv' | 'ocsf'>('csv');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [actions, setActions] = useState('');
  const download = useMutation({
    mutationFn: async () => {
      const body = {
        format,
        ...(fromLocalInput(from) ? { from: fromLocalInput(from) } : {}),
        ...(fromLocalInput(to) ? { to: fromLocalInput(to) } : {}),
        ...(splitList(actions).length ? { actions: splitList(actions) } : {}),
      };
      const response = await apiFetch('/api/settings/audit/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new ApiError(response.status, (await response.json()) as Problem);
      const blob = await response.blob();
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = `audit-${new Date().toISOString().slice(0, 10)}-${format}.${EXTENSIONS[format]}`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      return { bytes: blob.size };
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    download.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="audit-export">
      <h3 id="audit-export">Export</h3>
      <ProblemAlert error={download.error} title="The export failed" />
      <div className="row">
        <div className="field">
          <label htmlFor="export-format">Format</label>
          <select
            id="export-format"
            value={format}
            onChange={(event) => setFormat(event.target.value as typeof format)}
          >
            <option value="csv">CSV</option>
            <option value="jsonl">JSON lines</option>
            <option value="ocsf">OCSF (JSON lines)</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="export-from">From</label>
          <input
            id="export-from"
            type="datetime-local"
            value={from}
            onChange={(event) => setFrom(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="export-to">To</label>
          <input
            id="export-to"
            type="datetime-local"
            value={to}
            onChange={(event) => setTo(event.target.value)}
          />
        </div>
      </div>
      <div className="field">
        <label htmlFor="export-actions">Actions</label>
        <input
          id="export-actions"
          value={actions}
          onChange={(event) => setActions(event.target.value)}
          placeholder="member.added, flag.updated"
          aria-describedby="export-actions-hint"
        />
        <div className="hint" id="export-actions-hint">
          Separated by commas. Empty: every action
        </div>
      </div>
      <button type="submit" className="primary" disabled={download.isPending}>
        Download export
      </button>
      <div role="status" className="muted">
        {download.isPending
          ? 'Exporting…'
          : download.data
            ? `Downloaded ${formatNumber(download.data.bytes)} bytes.`
            : ''}
      </div>
    </form>
  );
}
