import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { formatCost, formatDuration, formatPercent, formatTime } from '../../ui/format.ts';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { RunTable } from '../runs/RunTable.tsx';
import { AgentPlaybooks } from './AgentPlaybooks.tsx';

export default function AgentPage() {
  const { id = '' } = useParams();
  const { can } = useWorkspace();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const agent = useQuery({
    queryKey: ['agent', id],
    queryFn: () => unwrap(api.GET('/api/agents/{id}', { params: { path: { id } } })),
  });
  const runs = useQuery({
    queryKey: ['runs', { agent_id: id }],
    queryFn: () => unwrap(api.GET('/api/runs', { params: { query: { agent_id: id, limit: 10 } } })),
  });
  // The default window (the API's: the last 24 hours), this agent's row.
  const analytics = useQuery({
    queryKey: ['analytics-agents'],
    queryFn: () => unwrap(api.GET('/api/analytics/agents')),
  });
  const stats = analytics.data?.items.find((item) => item.agent_id === id);
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/agents/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['agents'] });
      navigate('/agents');
    },
  });

  if (agent.isPending) return <Loading what="the agent" />;
  if (isNotFound(agent.error)) {
    return (
      <>
        <h1>Agent not found</h1>
        <p>
          No agent with this id exists in this workspace. <Link to="/agents">All agents</Link>
        </p>
      </>
    );
  }
  if (!agent.data) return <ProblemAlert error={agent.error} />;
  const a = agent.data;
  return (
    <>
      <div className="spread">
        <h1>
          {a.name} <Badge value={a.status} />
        </h1>
        {can('member') && (
          <div className="row">
            <Link className="button" to={`/agents/${a.id}/edit`}>
              Edit agent
            </Link>
            <ConfirmButton
              label="Delete agent"
              question={`Delete ${a.name}?`}
              confirmLabel="Yes, delete the agent"
              onConfirm={() => remove.mutate()}
              disabled={remove.isPending}
            />
          </div>
        )}
      </div>
      <ProblemAlert error={remove.error} title="The agent was not deleted" />
      <section className="card" aria-labelledby="agent-details">
        <h2 id="agent-details">Details</h2>
        <dl className="facts">
          <dt>Role</dt>
          <dd>{a.role ?? '—'}</dd>
          <dt>Model</dt>
          <dd>{a.model ? `${a.model.provider} / ${a.model.name}` : 'workspace default'}</dd>
          <dt>Policy</dt>
          <dd>{a.policy ? `${a.policy.id}${a.policy.label ? ` (${a.policy.label})` : ''}` : '—'}</dd>
          <dt>Tools</dt>
          <dd>{a.tools.length ? a.tools.map((tool) => tool.name).join(', ') : 'none'}</dd>
          <dt>Created</dt>
          <dd>{formatTime(a.created_at)}</dd>
        </dl>
        {a.description && <p>{a.description}</p>}
        {a.system_prompt && (
          <>
            <h3>System prompt</h3>
            <pre>{a.system_prompt}</pre>
          </>
        )}
      </section>
      <section aria-labelledby="agent-analytics" className="card">
        <h2 id="agent-analytics">Last 24 hours</h2>
        <ProblemAlert error={analytics.error} />
        {analytics.isPending && <Loading what="the agent's analytics" />}
        {analytics.data && !stats && <Empty>No steps in the last 24 hours.</Empty>}
        {stats && (
          <dl className="facts">
            <dt>Runs</dt>
            <dd>{stats.runs}</dd>
            <dt>Success rate</dt>
            <dd>{formatPercent(stats.success_rate)}</dd>
            <dt>Steps</dt>
            <dd>{stats.steps}</dd>
            <dt>Tokens</dt>
            <dd>
              {stats.input_tokens} in, {stats.output_tokens} out
            </dd>
            <dt>Cost</dt>
            <dd>{formatCost(stats.cost)}</dd>
            <dt>Step latency p50 / p95</dt>
            <dd>
              {formatDuration(stats.latency_p50_ms)} / {formatDuration(stats.latency_p95_ms)}
            </dd>
            <dt>Utilisation</dt>
            <dd>{formatPercent(stats.utilisation)}</dd>
          </dl>
        )}
      </section>
      <AgentPlaybooks agentId={a.id} canEdit={can('member')} />
      <section aria-labelledby="agent-runs">
        <h2 id="agent-runs">Recent runs</h2>
        <ProblemAlert error={runs.error} />
        {runs.data && runs.data.total === 0 && <Empty>This agent has not run yet.</Empty>}
        {runs.data && runs.data.items.length > 0 && (
          <RunTable runs={runs.data.items} caption="Runs of this agent" />
        )}
        {runs.data && runs.data.total > 10 && (
          <Link to={`/runs?agent_id=${a.id}`}>All {runs.data.total} runs</Link>
        )}
      </section>
    </>
  );
}
