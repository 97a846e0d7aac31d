import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useWorkspace } from '../../app/workspace.tsx';
import { Empty } from '../../ui/states.tsx';
import { recentPolicies } from './recent.ts';

/** The API's policy id pattern (policies.schemas.ts), checked by the browser before opening. */
export const POLICY_ID_PATTERN = '[a-z0-9][a-z0-9_\\-]{0,99}';

/**
 * `/policies`: the API reads a policy by its id and has no list of them, so this page opens one
 * by id and lists the ones opened in this tab.
 */
export default function PolicyList() {
  const { workspace, can } = useWorkspace();
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const recent = recentPolicies(workspace.id);
  const open = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = id.trim();
    if (trimmed) navigate(`/policies/${encodeURIComponent(trimmed)}`);
  };
  return (
    <>
      <h1>Policies</h1>
      <p className="muted">
        A policy is a named, versioned recipe for an agent's context: ordered sections with conditions,
        variables, the model, tools and a token budget. Labels such as production point at versions.
      </p>
      <section className="card" aria-labelledby="open-policy">
        <h2 id="open-policy">Open a policy</h2>
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
              Lower-case letters, digits, - and _.{' '}
              {can('admin')
                ? 'An id not used yet starts a new policy.'
                : 'Writing policies needs the admin role.'}
            </div>
          </div>
          <button type="submit" className="primary">
            Open policy
          </button>
        </form>
      </section>
      <section aria-labelledby="recent-policies">
        <h2 id="recent-policies">Opened in this tab</h2>
        {recent.length === 0 ? (
          <Empty>No policy opened yet in this tab. Open one by its id.</Empty>
        ) : (
          <ul aria-label="Recently opened policies">
            {recent.map((policyId) => (
              <li key={policyId}>
                <Link to={`/policies/${encodeURIComponent(policyId)}`}>{policyId}</Link>
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
