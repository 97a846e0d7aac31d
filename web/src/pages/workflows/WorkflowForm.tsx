import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, api, type Schemas, unwrap } from '../../api/client.ts';
import { keyedByOccurrence } from '../../lib/keys.ts';
import { goalPlaceholders } from '../../lib/placeholders.ts';
import { Field } from '../../ui/Field.tsx';
import { Loading, ProblemAlert } from '../../ui/states.tsx';

type Workflow = Schemas['Workflow'];
type Mode = 'sequential' | 'parallel';
type OnError = 'stop' | 'continue' | 'retry';

/** Create a workflow (`/workflows/new`) or edit one (`/workflows/:id/edit`). */
export default function WorkflowForm() {
  const { id } = useParams();
  const existing = useQuery({
    queryKey: ['workflow', id],
    queryFn: () => unwrap(api.GET('/api/workflows/{id}', { params: { path: { id: id ?? '' } } })),
    enabled: id !== undefined,
  });
  if (id && existing.isPending) return <Loading what="the workflow" />;
  if (id && existing.error) return <ProblemAlert error={existing.error} />;
  return <WorkflowEditor workflow={existing.data} />;
}

function WorkflowEditor({ workflow }: { workflow?: Workflow | undefined }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const operation = workflow ? 'updateWorkflow' : 'createWorkflow';
  const [name, setName] = useState(workflow?.name ?? '');
  const [description, setDescription] = useState(workflow?.description ?? '');
  const [goal, setGoal] = useState(workflow?.goal ?? '');
  const [agentIds, setAgentIds] = useState<string[]>(workflow?.agents ?? []);
  const policy = workflow?.execution_policy as
    | { mode?: Mode; error_handling?: OnError; max_retries?: number; timeout_seconds?: number }
    | undefined;
  const [mode, setMode] = useState<Mode>(policy?.mode ?? 'sequential');
  const [onError, setOnError] = useState<OnError>(policy?.error_handling ?? 'stop');
  const [retries, setRetries] = useState(String(policy?.max_retries ?? 0));
  const [timeout, setTimeoutSeconds] = useState(String(policy?.timeout_seconds ?? 600));
  const [adding, setAdding] = useState('');

  const agents = useQuery({
    queryKey: ['agents', 'all-for-workflow'],
    queryFn: () => unwrap(api.GET('/api/agents', { params: { query: { limit: 200 } } })),
  });
  const nameOf = (id: string) => agents.data?.items.find((agent) => agent.id === id)?.name ?? id;

  const save = useMutation({
    mutationFn: async () => {
      const body = {
        name: name.trim(),
        description: description.trim() || null,
        goal: goal || null,
        agents: agentIds,
        execution_policy: {
          mode,
          error_handling: onError,
          max_retries: Number(retries),
          timeout_seconds: Number(timeout),
        },
      };
      return workflow
        ? unwrap(api.PUT('/api/workflows/{id}', { params: { path: { id: workflow.id } }, body }))
        : unwrap(api.POST('/api/workflows', { body }));
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: ['workflows'] });
      queryClient.setQueryData(['workflow', saved.id], saved);
      navigate(`/workflows/${saved.id}`);
    },
  });

  const move = (index: number, by: number) =>
    setAgentIds((current) => {
      const next = [...current];
      const [moved] = next.splice(index, 1);
      if (moved !== undefined) next.splice(index + by, 0, moved);
      return next;
    });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  const placeholders = goalPlaceholders(goal);

  return (
    <>
      <h1>{workflow ? `Edit ${workflow.name}` : 'New workflow'}</h1>
      <form className="narrow" onSubmit={submit}>
        <ProblemAlert error={save.error} title="The workflow was not saved" />
        <Field label="Name" operation={operation} name="name" error={save.error}>
          {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
        </Field>
        <Field label="Description" operation={operation} name="description" error={save.error}>
          {(props) => (
            <textarea
              {...props}
              value={description}
              onChange={(event) => setDescription(event.target.value)}
            />
          )}
        </Field>
        <Field
          label="Goal"
          operation={operation}
          name="goal"
          error={save.error}
          hint={
            placeholders.length > 0
              ? `Asked for at each run: ${placeholders.join(', ')}`
              : 'Write {{name}} for a value asked for at each run'
          }
        >
          {(props) => <textarea {...props} value={goal} onChange={(event) => setGoal(event.target.value)} />}
        </Field>
        <fieldset className="field">
          <legend>Agents, in order</legend>
          {agentIds.length === 0 && <p className="muted">No agents yet: add the first one below.</p>}
          <ol>
            {keyedByOccurrence(agentIds).map(({ key, value: id, index }) => (
              <li key={key} className="row">
                <span>{nameOf(id)}</span>
                <button
                  type="button"
                  onClick={() => move(index, -1)}
                  disabled={index === 0}
                  aria-label={`Move ${nameOf(id)} up`}
                >
                  Up
                </button>
                <button
                  type="button"
                  onClick={() => move(index, 1)}
                  disabled={index === agentIds.length - 1}
                  aria-label={`Move ${nameOf(id)} down`}
                >
                  Down
                </button>
                <button
                  type="button"
                  onClick={() => setAgentIds((current) => current.filter((_, at) => at !== index))}
                  aria-label={`Remove ${nameOf(id)}`}
                >
                  Remove
                </button>
              </li>
            ))}
          </ol>
          {save.error instanceof ApiError && save.error.fieldError('agents') && (
            <div className="error">{save.error.fieldError('agents')}</div>
          )}
          <div className="row">
            <label htmlFor="add-agent" className="visually-hidden">
              Agent to add
            </label>
            <select id="add-agent" value={adding} onChange={(event) => setAdding(event.target.value)}>
              <option value="">Choose an agent…</option>
              {agents.data?.items.map((agent) => (
                <option key={agent.id} value={agent.id}>
                  {agent.name}
                </option>
              ))}
            </select>
            <button
              type="button"
              disabled={!adding}
              onClick={() => {
                setAgentIds((current) => [...current, adding]);
                setAdding('');
              }}
            >
              Add agent
            </button>
          </div>
        </fieldset>
        <fieldset className="field">
          <legend>Execution policy</legend>
          <div className="row">
            <Field label="Mode" operation={operation} name="execution_policy.mode" error={save.error}>
              {(props) => (
                <select {...props} value={mode} onChange={(event) => setMode(event.target.value as Mode)}>
                  <option value="sequential">sequential</option>
                  <option value="parallel">parallel</option>
                </select>
              )}
            </Field>
            <Field
              label="When a step fails"
              operation={operation}
              name="execution_policy.error_handling"
              error={save.error}
            >
              {(props) => (
                <select
                  {...props}
                  value={onError}
                  onChange={(event) => setOnError(event.target.value as OnError)}
                >
                  <option value="stop">stop the run</option>
                  <option value="continue">continue</option>
                  <option value="retry">retry</option>
                </select>
              )}
            </Field>
            <Field
              label="Retries per step"
              operation={operation}
              name="execution_policy.max_retries"
              error={save.error}
            >
              {(props) => (
                <input
                  {...props}
                  type="number"
                  value={retries}
                  onChange={(event) => setRetries(event.target.value)}
                />
              )}
            </Field>
            <Field
              label="Timeout (seconds)"
              operation={operation}
              name="execution_policy.timeout_seconds"
              error={save.error}
            >
              {(props) => (
                <input
                  {...props}
                  type="number"
                  value={timeout}
                  onChange={(event) => setTimeoutSeconds(event.target.value)}
                />
              )}
            </Field>
          </div>
        </fieldset>
        <div className="row">
          <button type="submit" className="primary" disabled={save.isPending}>
            {workflow ? 'Save workflow' : 'Create workflow'}
          </button>
          <Link className="button" to={workflow ? `/workflows/${workflow.id}` : '/workflows'}>
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
