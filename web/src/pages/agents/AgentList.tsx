import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { type ActivityEvent, useActivityFeed } from '../../lib/activity.ts';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatTime } from '../../ui/format.ts';
import { FilterSelect, SearchFilter } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';

const STATUSES = ['Active', 'Busy', 'Idle', 'Error'] as const;

export default function AgentList() {
  const { can } = useWorkspace();
  const list = useListParams(['status']);
  const status = list.filters.status as (typeof STATUSES)[number] | '';
  const agents = useQuery({
    queryKey: ['agents', list.q, status, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/agents', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              ...(list.q ? { q: list.q } : {}),
              ...(status ? { status } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  // An agent's status changes as runs start and end: follow it live.
  const queryClient = useQueryClient();
  const onEvent = useCallback(
    (event: ActivityEvent) => {
      if (event.kind.startsWith('agent.')) void queryClient.invalidateQueries({ queryKey: ['agents'] });
    },
    [queryClient],
  );
  useActivityFeed(onEvent);

  return (
    <>
      <div className="spread">
        <h1>Agents</h1>
        {can('member') && (
          <Link className="button primary" to="/agents/new">
            New agent
          </Link>
        )}
      </div>
      <div className="row">
        <SearchFilter
          label="Search agents"
          value={list.q}
          onChange={list.setQ}
          placeholder="Name or description"
        />
        <FilterSelect label="Status" value={status} onChange={(value) => list.setFilter('status', value)}>
          {STATUSES.map((value) => (
            <option key={value}>{value}</option>
          ))}
        </FilterSelect>
      </div>
      <ProblemAlert error={agents.error} />
      {agents.isPending && <Loading what="agents" />}
      {agents.data && agents.data.total === 0 && (
        <Empty>
          {list.q || status ? 'No agent matches.' : 'No agents yet. Create one to build workflows.'}
        </Empty>
      )}
      {agents.data && agents.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Agents</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {agents.data.items.map((agent) => (
                <tr key={agent.id}>
                  <td>
                    <Link to={`/agents/${agent.id}`}>{agent.name}</Link>
                    {agent.role && <div className="muted">{agent.role}</div>}
                  </td>
                  <td>
                    <Badge value={agent.status} />
                  </td>
                  <td>
                    {agent.model ? `${agent.model.provider} / ${agent.model.name}` : 'workspace default'}
                  </td>
                  <td>{formatTime(agent.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {agents.data && (
        <Pager
          label="Agents"
          offset={list.offset}
          limit={list.limit}
          total={agents.data.total}
          onChange={list.setOffset}
        />
      )}
    </>
  );
}
