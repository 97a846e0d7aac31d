import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';

/** The API's policy id pattern (policies.schemas.ts), checked by the browser before opening. */
export const POLICY_ID_PATTERN = '[a-z0-9][a-z0-9_\\-]{0,99}';

/** Labels in a stable order: production first, latest next, the others by name. */
const labelOrder = (labels: Record<string, number>): [string, number][] =>
  Object.entries(labels).sort(([a], [b]) => {
    const rank = (label: string) => (label === 'production' ? 0 : label === 'latest' ? 1 : 2);
    return rank(a) - rank(b) || a.localeCompare(b);
  });

/**
 * `/policies`: the workspace's policies (`GET /api/policy`), most recently changed first, paged
 * and searchable by id or description; admins also open an id not used yet to create a policy.
 */
export default function PolicyList() {
  const { can } = useWorkspace();
  const list = useListParams();
  const policies = useQuery({
    queryKey: ['policies', list.q, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/policy', {
          params: { query: { limit: list.limit, offset: list.offset, ...(list.q ? { q: list.q } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });

  return (
    <>
      <h1>Policies</h1>
      <p className="muted">
        A policy is a named, versioned recipe for an agent's context: ordered sections with conditions,
        variables, the model, tools and a token budget. Labels such as production point at versions.
      </p>
      {can('admin') ? (
        <NewPolicy />
      ) : (
        <p className="muted">Read-only: writing policies needs the admin role.</p>
      )}
      <section aria-labelledby="policy-list">
        <h2 id="policy-list">Policies of this workspace</h2>
        <div className="row">
          <div className="field">
            <label htmlFor="policy-search">Search policies</label>
            <input
              id="policy-search"
              type="search"
              maxLength={255}
              defaultValue={list.q}
              onChange={(event) => list.setQ(event.target.value)}
              placeholder="Id or description"
            />
          </div>
        </div>
        <ProblemAlert error={policies.error} />
        {policies.isPending && <Loading what="policies" />}
        {policies.data && policies.data.total === 0 && (
          <Empty>
            {list.q
              ? 'No policy matches.'
              : can('admin')
                ? 'No policies yet. Create one by its id above.'
                : 'No policies yet. An admin creates them.'}
          </Empty>
        )}
        {policies.data && policies.data.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Policies</caption>
              <thead>
                <tr>
                  <th scope="col">Policy</th>
                  <th scope="col">Latest version</th>
                  <th scope="col">Labels</th>
                  <th scope="col">A/B test</th>
                  <th scope="col">Changed</th>
                </tr>
              </thead>
              <tbody>
                {policies.data.items.map((policy) => (
                  <tr key={policy.policy_id}>
                    <td>
                      <Link to={`/policies/${encodeURIComponent(policy.policy_id)}`}>{policy.policy_id}</Link>
                      {policy.description && <div className="muted">{policy.description}</div>}
                    </td>
                    <td>v{policy.latest_version}</td>
                    <td>
                      {labelOrder(policy.labels)
                        .map(([label, version]) => `${label} → v${version}`)
                        .join(', ')}
                    </td>
                    <td>
                      {policy.experiment_running ? (
                        <Badge value="Running" />
                      ) : (
                        <span className="muted">none running</span>
                      )}
                    </td>
                    <td>{formatTime(policy.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {policies.data && (
          <Pager
            label="Policies"
            offset={list.offset}
            limit={list.limit}
            total={policies.data.total}
            onChange={list.setOffset}
          />
        )}
      </section>
    </>
  );
}

/** Admins open a policy by its id; an id not used yet offers a starter policy to create. */
function NewPolicy() {
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const open = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = id.trim();
    if (trimmed) navigate(`/policies/${encodeURIComponent(trimmed)}`);
  };
  return (
    <section className="card" aria-labelledby="open-policy">
      <h2 id="open-policy">New policy</h2>
      <form className="row" onSubmit={open}>
        <div className="field">
          <label htmlFor="policy-id">Policy id</label>
          <input
            id="policy-id"
            required
            pattern={POLICY_ID_PATTERN}
            maxLength={100}
            value={id}
            onChange={(event) => setId(event.target.value)}
            placeholder="support-triage"
            aria-describedby="policy-id-hint"
          />
          <div className="hint" id="policy-id-hint">
            Lower-case letters, digits, - and _. An id not used yet starts a new policy; an existing one opens
            it.
          </div>
        </div>
        <button type="submit" className="primary">
          Open policy
        </button>
      </form>
    </section>
  );
}
