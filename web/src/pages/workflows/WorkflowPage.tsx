import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { keyedByOccurrence } from '../../lib/keys.ts';
import { goalPlaceholders } from '../../lib/placeholders.ts';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { RunTable } from '../runs/RunTable.tsx';

export default function WorkflowPage() {
  const { id = '' } = useParams();
  const { can } = useWorkspace();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const workflow = useQuery({
    queryKey: ['workflow', id],
    queryFn: () => unwrap(api.GET('/api/workflows/{id}', { params: { path: { id } } })),
  });
  const agents = useQuery({
    queryKey: ['agents', 'all-for-workflow'],
    queryFn: () => unwrap(api.GET('/api/agents', { params: { query: { limit: 200 } } })),
  });
  const runs = useQuery({
    queryKey: ['runs', { workflow_id: id }],
    queryFn: () => unwrap(api.GET('/api/runs', { params: { query: { workflow_id: id, limit: 10 } } })),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/workflows/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['workflows'] });
      navigate('/workflows');
    },
  });

  if (workflow.isPending) return <Loading what="the workflow" />;
  if (isNotFound(workflow.error)) {
    return (
      <>
        <h1>Workflow not found</h1>
        <p>
          No workflow with this id exists in this workspace. <Link to="/workflows">All workflows</Link>
        </p>
      </>
    );
  }
  if (!workflow.data) return <ProblemAlert error={workflow.error} />;
  const w = workflow.data;
  const nameOf = (agentId: string) =>
    agents.data?.items.find((agent) => agent.id === agentId)?.name ?? agentId;
  return (
    <>
      <div className="spread">
        <h1>
          {w.name} <Badge value={w.status} />
        </h1>
        {can('member') && (
          <div className="row">
            <Link className="button" to={`/workflows/${w.id}/edit`}>
              Edit workflow
            </Link>
            <ConfirmButton
              label="Delete workflow"
              question={`Delete ${w.name}?`}
              confirmLabel="Yes, delete the workflow"
              onConfirm={() => remove.mutate()}
              disabled={remove.isPending}
            />
          </div>
        )}
      </div>
      <ProblemAlert error={remove.error} title="The workflow was not deleted" />
      <div className="grid">
        <section className="card" aria-labelledby="workflow-details">
          <h2 id="workflow-details">Details</h2>
          {w.description && <p>{w.description}</p>}
          <h3>Goal</h3>
          <pre>{w.goal ?? '—'}</pre>
          <h3>Agents</h3>
          {w.agents.length === 0 ? (
            <Empty>No agents: add some before running.</Empty>
          ) : (
            <ol>
              {keyedByOccurrence(w.agents).map(({ key, value: agentId }) => (
                <li key={key}>
                  <Link to={`/agents/${agentId}`}>{nameOf(agentId)}</Link>
                </li>
              ))}
            </ol>
          )}
        </section>
        {can('member') && <RunForm workflowId={w.id} goal={w.goal} />}
      </div>
      <section aria-labelledby="workflow-runs">
        <h2 id="workflow-runs">Recent runs</h2>
        <ProblemAlert error={runs.error} />
        {runs.data && runs.data.total === 0 && <Empty>Not run yet.</Empty>}
        {runs.data && runs.data.items.length > 0 && (
          <RunTable runs={runs.data.items} caption="Runs of this workflow" />
        )}
        {runs.data && runs.data.total > 10 && (
          <Link to={`/runs?workflow_id=${w.id}`}>All {runs.data.total} runs</Link>
        )}
      </section>
    </>
  );
}

/** The run form: one input per `{{placeholder}}` of the goal. */
function RunForm({ workflowId, goal }: { workflowId: string; goal: string | null }) {
  const navigate = useNavigate();
  const placeholders = goalPlaceholders(goal);
  const [inputs, setInputs] = useState<Record<string, string>>({});
  const start = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/workflows/{id}/run', {
          params: { path: { id: workflowId } },
          body: { inputs: Object.fromEntries(placeholders.map((name) => [name, inputs[name] ?? ''])) },
        }),
      ),
    onSuccess: (run) => navigate(`/runs/${run.id}`),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  return (
    <section className="card" aria-labelledby="run-heading">
      <h2 id="run-heading">Run</h2>
      <form onSubmit={submit}>
        <ProblemAlert error={start.error} title="The run did not start" />
        {placeholders.map((name) => {
          const message =
            start.error instanceof ApiError ? start.error.fieldError(`inputs.${name}`) : undefined;
          return (
            <div className="field" key={name}>
              <label htmlFor={`input-${name}`}>{name}</label>
              <input
                id={`input-${name}`}
                required
                maxLength={100_000}
                aria-invalid={Boolean(message)}
                value={inputs[name] ?? ''}
                onChange={(event) => setInputs((current) => ({ ...current, [name]: event.target.value }))}
              />
              {message && <div className="error">{message}</div>}
            </div>
          );
        })}
        <button type="submit" className="primary" disabled={start.isPending}>
          Run workflow
        </button>
      </form>
    </section>
  );
}
