import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { formatDuration, formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { isSecret } from './DataFields.tsx';
import { useCredentialTypes } from './types.ts';

const AUDIT_PAGE = 20;
const ACTIONS = [
  'created',
  'updated',
  'deleted',
  'accessed',
  'access_denied',
  'access_failed',
  'tested',
] as const;

export default function CredentialPage() {
  const { id = '' } = useParams();
  const numericId = Number(id);
  const { can } = useWorkspace();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const types = useCredentialTypes();
  const credential = useQuery({
    queryKey: ['credential', id],
    queryFn: () => unwrap(api.GET('/api/credentials/{id}', { params: { path: { id: numericId } } })),
    enabled: Number.isInteger(numericId),
  });
  const test = useMutation({
    mutationFn: () => unwrap(api.POST('/api/credentials/{id}/test', { params: { path: { id: numericId } } })),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['credential', id] });
      void queryClient.invalidateQueries({ queryKey: ['credential-audit', id] });
      void queryClient.invalidateQueries({ queryKey: ['credentials'] });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/credentials/{id}', { params: { path: { id: numericId } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['credentials'] });
      navigate('/credentials');
    },
  });

  if (!Number.isInteger(numericId) || isNotFound(credential.error)) {
    return (
      <>
        <h1>Credential not found</h1>
        <p>
          No credential with this id exists in this workspace. <Link to="/credentials">All credentials</Link>
        </p>
      </>
    );
  }
  if (credential.isPending) return <Loading what="the credential" />;
  if (!credential.data) return <ProblemAlert error={credential.error} />;
  const c = credential.data;
  const type = types.data?.items.find((item) => item.id === c.credential_type_id);
  const fields = type?.schema_definition ?? [];
  const shown = fields.filter((field) => !isSecret(field));
  const secrets = fields.filter((field) => field.type === 'password');

  return (
    <>
      <div className="spread">
        <h1>
          {c.name} {!c.is_active && <Badge value="Inactive" tone="neutral" />}{' '}
          {c.is_expired && <Badge value="Expired" tone="bad" />}
        </h1>
        {can('member') && (
          <div className="row">
            <Link className="button" to={`/credentials/${c.id}/edit`}>
              Edit credential
            </Link>
            <ConfirmButton
              label="Delete credential"
              question={`Delete ${c.name}?`}
              confirmLabel="Yes, delete the credential"
              onConfirm={() => remove.mutate()}
              disabled={remove.isPending}
            />
          </div>
        )}
      </div>
      <ProblemAlert error={remove.error} title="The credential was not deleted" />
      <div className="grid">
        <section className="card" aria-labelledby="credential-details">
          <h2 id="credential-details">Details</h2>
          <dl className="facts">
            <dt>Type</dt>
            <dd>{type?.display_name ?? c.credential_type}</dd>
            <dt>Environment</dt>
            <dd>{c.environment}</dd>
            <dt>Tags</dt>
            <dd>{c.tags.length ? c.tags.join(', ') : '—'}</dd>
            <dt>Expires</dt>
            <dd>{c.expires_at ? formatTime(c.expires_at) : 'never'}</dd>
            <dt>Allowed hosts</dt>
            <dd>{c.allowed_hosts?.length ? c.allowed_hosts.join(', ') : 'the test URL’s host'}</dd>
            <dt>Created</dt>
            <dd>
              {formatTime(c.created_at)}
              {c.created_by ? ` by ${c.created_by}` : ''}
            </dd>
            <dt>Updated</dt>
            <dd>{formatTime(c.updated_at)}</dd>
          </dl>
          {c.description && <p>{c.description}</p>}
        </section>
        <section className="card" aria-labelledby="credential-data">
          <h2 id="credential-data">Connection</h2>
          <dl className="facts">
            {shown.map((field) => {
              const value = c.data?.[field.name];
              return [
                <dt key={`${field.name}-label`}>{field.label}</dt>,
                <dd key={`${field.name}-value`}>
                  {value === undefined || value === null || value === ''
                    ? '—'
                    : typeof value === 'boolean'
                      ? value
                        ? 'yes'
                        : 'no'
                      : String(value)}
                </dd>,
              ];
            })}
            {secrets.map((field) => [
              <dt key={`${field.name}-label`}>{field.label}</dt>,
              <dd key={`${field.name}-value`} className="muted">
                stored, never shown
              </dd>,
            ])}
          </dl>
        </section>
        <section className="card" aria-labelledby="credential-test">
          <h2 id="credential-test">Connection test</h2>
          <div role="status" aria-live="polite">
            {test.data ? (
              <TestResult
                status={test.data.status}
                message={test.data.message}
                at={test.data.tested_at}
                duration={test.data.duration_ms}
              />
            ) : c.test_status ? (
              <TestResult status={c.test_status} message={c.test_message} at={c.last_tested} />
            ) : (
              <p className="muted">Not tested yet.</p>
            )}
            {test.isPending && <p className="muted">Testing…</p>}
          </div>
          <ProblemAlert error={test.error} title="The test did not run" />
          {can('member') && (
            <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
              Test connection
            </button>
          )}
        </section>
      </div>
      <AuditLog id={id} />
    </>
  );
}

function TestResult({
  status,
  message,
  at,
  duration,
}: {
  status: 'passed' | 'failed';
  message: string | null;
  at: string | null;
  duration?: number;
}) {
  return (
    <dl className="facts">
      <dt>Result</dt>
      <dd>
        <Badge value={status === 'passed' ? 'Passed' : 'Failed'} tone={status === 'passed' ? 'ok' : 'bad'} />
      </dd>
      <dt>Message</dt>
      <dd>{message || '—'}</dd>
      <dt>Tested</dt>
      <dd>{formatTime(at)}</dd>
      {duration !== undefined && (
        <>
          <dt>Took</dt>
          <dd>{formatDuration(duration)}</dd>
        </>
      )}
    </dl>
  );
}

function AuditLog({ id }: { id: string }) {
  const [offset, setOffset] = useState(0);
  const [action, setAction] = useState('');
  const log = useQuery({
    queryKey: ['credential-audit', id, action, offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/credentials/{id}/audit-logs', {
          params: {
            path: { id: Number(id) },
            query: {
              limit: AUDIT_PAGE,
              offset,
              ...(action ? { action: action as (typeof ACTIONS)[number] } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="credential-audit">
      <div className="spread">
        <h2 id="credential-audit">Audit log</h2>
        <div className="field">
          <label htmlFor="audit-action">Action</label>
          <select
            id="audit-action"
            value={action}
            onChange={(event) => {
              setAction(event.target.value);
              setOffset(0);
            }}
          >
            <option value="">Any</option>
            {ACTIONS.map((value) => (
              <option key={value} value={value}>
                {value.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ProblemAlert error={log.error} />
      {log.isPending && <Loading what="the audit log" />}
      {log.data && log.data.total === 0 && <Empty>No audit records{action ? ' for this action' : ''}.</Empty>}
      {log.data && log.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Audit log of the credential</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">Who</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {log.data.items.map((record) => (
                <tr key={record.id}>
                  <td>{formatTime(record.created_at)}</td>
                  <td>{record.action.replace('_', ' ')}</td>
                  <td>
                    {record.user_id ?? 'the service'}
                    {record.ip_address && <div className="muted">{record.ip_address}</div>}
                  </td>
                  <td>
                    <code className="small">{summarize(record.metadata)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {log.data && (
        <Pager
          label="Audit log"
          offset={offset}
          limit={AUDIT_PAGE}
          total={log.data.total}
          onChange={setOffset}
        />
      )}
    </section>
  );
}

const summarize = (metadata: Record<string, unknown>) =>
  Object.entries(metadata)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('; ') || '—';
