import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client.ts';
import { useListParams } from '../../lib/list-params.ts';
import { FilterSelect } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { RunTable } from './RunTable.tsx';

const STATUSES = ['Queued', 'Running', 'Paused', 'Completed', 'Failed', 'Cancelled'] as const;
type Status = (typeof STATUSES)[number];

export default function RunList() {
  const list = useListParams(['status', 'workflow_id', 'agent_id']);
  const { status, workflow_id, agent_id } = list.filters;
  const workflows = useQuery({
    queryKey: ['workflows', 'all-for-filter'],
    queryFn: () => unwrap(api.GET('/api/workflows', { params: { query: { limit: 200 } } })),
  });
  const agents = useQuery({
    queryKey: ['agents', 'all-for-workflow'],
    queryFn: () => unwrap(api.GET('/api/agents', { params: { query: { limit: 200 } } })),
  });
  const runs = useQuery({
    queryKey: ['runs', list.filters, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/runs', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              ...(status ? { status: status as Status } : {}),
              ...(workflow_id ? { workflow_id } : {}),
              ...(agent_id ? { agent_id } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  return (
    <>
      <h1>Runs</h1>
      <div className="row">
        <FilterSelect
          label="Workflow"
          value={workflow_id}
          onChange={(value) => list.setFilter('workflow_id', value)}
        >
          {workflows.data?.items.map((workflow) => (
            <option key={workflow.id} value={workflow.id}>
              {workflow.name}
            </option>
          ))}
        </FilterSelect>
        <FilterSelect label="Agent" value={agent_id} onChange={(value) => list.setFilter('agent_id', value)}>
          {agents.data?.items.map((agent) => (
            <option key={agent.id} value={agent.id}>
              {agent.name}
            </option>
          ))}
        </FilterSelect>
        <FilterSelect label="Status" value={status} onChange={(value) => list.setFilter('status', value)}>
          {STATUSES.map((value) => (
            <option key={value}>{value}</option>
          ))}
        </FilterSelect>
      </div>
      <ProblemAlert error={runs.error} />
      {runs.isPending && <Loading what="runs" />}
      {runs.data && runs.data.total === 0 && <Empty>No runs match.</Empty>}
      {runs.data && runs.data.items.length > 0 && <RunTable runs={runs.data.items} caption="Runs" />}
      {runs.data && (
        <Pager
          label="Runs"
          offset={list.offset}
          limit={list.limit}
          total={runs.data.total}
          onChange={list.setOffset}
        />
      )}
    </>
  );
}
