import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatTime } from '../../ui/format.ts';
import { SearchFilter } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';

export default function WorkflowList() {
  const { can } = useWorkspace();
  const list = useListParams();
  const workflows = useQuery({
    queryKey: ['workflows', list.q, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/workflows', {
          params: { query: { limit: list.limit, offset: list.offset, ...(list.q ? { q: list.q } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <div className="spread">
        <h1>Workflows</h1>
        {can('member') && (
          <Link className="button primary" to="/workflows/new">
            New workflow
          </Link>
        )}
      </div>
      <SearchFilter label="Search workflows" value={list.q} onChange={list.setQ} />
      <ProblemAlert error={workflows.error} />
      {workflows.isPending && <Loading what="workflows" />}
      {workflows.data && workflows.data.total === 0 && (
        <Empty>
          {list.q
            ? 'No workflow matches.'
            : 'No workflows yet: a workflow runs agents in order toward a goal.'}
        </Empty>
      )}
      {workflows.data && workflows.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Workflows</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Agents</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {workflows.data.items.map((workflow) => (
                <tr key={workflow.id}>
                  <td>
                    <Link to={`/workflows/${workflow.id}`}>{workflow.name}</Link>
                  </td>
                  <td>
                    <Badge value={workflow.status} />
                  </td>
                  <td>{workflow.agents.length}</td>
                  <td>{formatTime(workflow.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {workflows.data && (
        <Pager
          label="Workflows"
          offset={list.offset}
          limit={list.limit}
          total={workflows.data.total}
          onChange={list.setOffset}
        />
      )}
    </>
  );
}
