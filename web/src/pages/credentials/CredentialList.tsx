import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatTime } from '../../ui/format.ts';
import { FilterSelect, SearchFilter } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { byCategory, categoryLabel, useCredentialTypes } from './types.ts';

export default function CredentialList() {
  const { can } = useWorkspace();
  const list = useListParams(['type', 'environment', 'expired']);
  const { type, environment, expired } = list.filters;
  const types = useCredentialTypes();
  const credentials = useQuery({
    queryKey: ['credentials', list.q, type, environment, expired, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/credentials', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              ...(list.q ? { q: list.q } : {}),
              ...(type ? { credential_type_id: Number(type) } : {}),
              ...(environment ? { environment } : {}),
              ...(expired ? { expired: expired === 'true' } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const typeName = (name: string) =>
    types.data?.items.find((item) => item.name === name)?.display_name ?? name;
  const filtered = Boolean(list.q || type || environment || expired);

  return (
    <>
      <div className="spread">
        <h1>Credentials</h1>
        {can('member') && (
          <Link className="button primary" to="/credentials/new">
            New credential
          </Link>
        )}
      </div>
      <p className="muted">
        Secrets are encrypted in the vault and never shown again: tools and providers use them by reference.
      </p>
      <div className="row filters">
        <SearchFilter
          label="Search credentials"
          value={list.q}
          onChange={list.setQ}
          placeholder="Name or description"
        />
        <FilterSelect label="Type" value={type} onChange={(value) => list.setFilter('type', value)}>
          {byCategory(types.data?.items ?? []).map(([category, items]) => (
            <optgroup key={category} label={categoryLabel(category)}>
              {items.map((item) => (
                <option key={item.id} value={item.id}>
                  {item.display_name}
                </option>
              ))}
            </optgroup>
          ))}
        </FilterSelect>
        <div className="field">
          <label htmlFor="credential-environment">Environment</label>
          <input
            id="credential-environment"
            defaultValue={environment}
            onChange={(event) => list.setFilter('environment', event.target.value.trim())}
            placeholder="production"
          />
        </div>
        <FilterSelect label="Expiry" value={expired} onChange={(value) => list.setFilter('expired', value)}>
          <option value="false">Not expired</option>
          <option value="true">Expired</option>
        </FilterSelect>
      </div>
      <ProblemAlert error={credentials.error} />
      {credentials.isPending && <Loading what="credentials" />}
      {credentials.data && credentials.data.total === 0 && (
        <Empty>
          {filtered ? 'No credential matches.' : 'No credentials yet. Add one from a type below.'}
        </Empty>
      )}
      {credentials.data && credentials.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Credentials</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Environment</th>
                <th scope="col">Last test</th>
                <th scope="col">Expires</th>
              </tr>
            </thead>
            <tbody>
              {credentials.data.items.map((credential) => (
                <tr key={credential.id}>
                  <td>
                    <Link to={`/credentials/${credential.id}`}>{credential.name}</Link>
                    {credential.tags.length > 0 && <div className="muted">{credential.tags.join(', ')}</div>}
                    {!credential.is_active && <Badge value="Inactive" tone="neutral" />}
                  </td>
                  <td>{typeName(credential.credential_type)}</td>
                  <td>{credential.environment}</td>
                  <td>
                    {credential.test_status ? (
                      <>
                        <Badge
                          value={credential.test_status}
                          tone={credential.test_status === 'passed' ? 'ok' : 'bad'}
                        />{' '}
                        <span className="muted">{formatTime(credential.last_tested)}</span>
                      </>
                    ) : (
                      <span className="muted">never</span>
                    )}
                  </td>
                  <td>
                    {credential.is_expired ? (
                      <Badge value="Expired" tone="bad" />
                    ) : (
                      formatTime(credential.expires_at)
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {credentials.data && (
        <Pager
          label="Credentials"
          offset={list.offset}
          limit={list.limit}
          total={credentials.data.total}
          onChange={list.setOffset}
        />
      )}
      <section aria-labelledby="credential-types">
        <h2 id="credential-types">Credential types</h2>
        {types.isPending && <Loading what="credential types" />}
        <ProblemAlert error={types.error} />
        <div className="grid">
          {byCategory(types.data?.items ?? []).map(([category, items]) => (
            <section key={category} className="card" aria-labelledby={`category-${category}`}>
              <h3 id={`category-${category}`}>{categoryLabel(category)}</h3>
              <ul className="plain">
                {items.map((item) => (
                  <li key={item.id}>
                    {can('member') ? (
                      <Link
                        to={`/credentials/new?type=${item.id}`}
                        aria-label={`New ${item.display_name} credential`}
                      >
                        {item.display_name}
                      </Link>
                    ) : (
                      item.display_name
                    )}
                    {item.description && <div className="muted small">{item.description}</div>}
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </div>
      </section>
    </>
  );
}
