import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { Field } from '../../ui/Field.tsx';
import { Loading, ProblemAlert } from '../../ui/states.tsx';

type Agent = Schemas['Agent'];

interface Draft {
  name: string;
  role: string;
  description: string;
  provider: string;
  model: string;
  system_prompt: string;
  policy: string;
  tools: string[];
}

const draftOf = (agent?: Agent): Draft => ({
  name: agent?.name ?? '',
  role: agent?.role ?? '',
  description: agent?.description ?? '',
  provider: agent?.model?.provider ?? '',
  model: agent?.model?.name ?? '',
  system_prompt: agent?.system_prompt ?? '',
  policy: agent?.policy?.id ?? '',
  tools: agent?.tools.map((tool) => tool.name) ?? [],
});

/** Create an agent (`/agents/new`) or edit one (`/agents/:id/edit`). */
export default function AgentForm() {
  const { id } = useParams();
  const existing = useQuery({
    queryKey: ['agent', id],
    queryFn: () => unwrap(api.GET('/api/agents/{id}', { params: { path: { id: id ?? '' } } })),
    enabled: id !== undefined,
  });
  if (id && existing.isPending) return <Loading what="the agent" />;
  if (id && existing.error) return <ProblemAlert error={existing.error} />;
  return <AgentEditor agent={existing.data} />;
}

function AgentEditor({ agent }: { agent?: Agent | undefined }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState(() => draftOf(agent));
  const tools = useQuery({ queryKey: ['tools'], queryFn: () => unwrap(api.GET('/api/tools')) });
  const operation = agent ? 'updateAgent' : 'createAgent';
  const set = (name: keyof Draft) => (event: { target: { value: string } }) =>
    setDraft((current) => ({ ...current, [name]: event.target.value }));

  const save = useMutation({
    mutationFn: async () => {
      const keptConfig = new Map(agent?.tools.map((tool) => [tool.name, tool.config]) ?? []);
      const body = {
        name: draft.name.trim(),
        role: draft.role.trim() || null,
        description: draft.description.trim() || null,
        model:
          draft.provider.trim() && draft.model.trim()
            ? { provider: draft.provider.trim(), name: draft.model.trim() }
            : null,
        system_prompt: draft.system_prompt || null,
        policy: draft.policy.trim() ? { id: draft.policy.trim() } : null,
        tools: draft.tools.map((name) => ({ name, config: keptConfig.get(name) ?? {} })),
      };
      return agent
        ? unwrap(api.PUT('/api/agents/{id}', { params: { path: { id: agent.id } }, body }))
        : unwrap(api.POST('/api/agents', { body }));
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: ['agents'] });
      queryClient.setQueryData(['agent', saved.id], saved);
      navigate(`/agents/${saved.id}`);
    },
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };

  return (
    <>
      <h1>{agent ? `Edit ${agent.name}` : 'New agent'}</h1>
      <form className="narrow" onSubmit={submit} noValidate={false}>
        <ProblemAlert error={save.error} title="The agent was not saved" />
        <Field label="Name" operation={operation} name="name" error={save.error}>
          {(props) => <input {...props} value={draft.name} onChange={set('name')} />}
        </Field>
        <Field
          label="Role"
          operation={operation}
          name="role"
          error={save.error}
          hint="What the agent does, in a few words"
        >
          {(props) => <input {...props} value={draft.role} onChange={set('role')} />}
        </Field>
        <Field label="Description" operation={operation} name="description" error={save.error}>
          {(props) => <textarea {...props} value={draft.description} onChange={set('description')} />}
        </Field>
        <div className="row">
          <Field
            label="Model provider"
            operation={operation}
            name="model.provider"
            error={save.error}
            hint="Empty: the workspace's default model"
          >
            {(props) => (
              <input
                {...props}
                required={false}
                value={draft.provider}
                onChange={set('provider')}
                placeholder="openai"
              />
            )}
          </Field>
          <Field label="Model name" operation={operation} name="model.name" error={save.error}>
            {(props) => (
              <input
                {...props}
                required={false}
                value={draft.model}
                onChange={set('model')}
                placeholder="gpt-4o-mini"
              />
            )}
          </Field>
        </div>
        <Field label="System prompt" operation={operation} name="system_prompt" error={save.error}>
          {(props) => <textarea {...props} value={draft.system_prompt} onChange={set('system_prompt')} />}
        </Field>
        <Field
          label="Policy"
          operation={operation}
          name="policy.id"
          error={save.error}
          hint="A policy id: its assembled context replaces the system prompt"
        >
          {(props) => <input {...props} required={false} value={draft.policy} onChange={set('policy')} />}
        </Field>
        <fieldset className="field">
          <legend>Tools</legend>
          {tools.isPending && <Loading what="tools" />}
          {tools.data?.items.map((tool) => (
            <div key={tool.name} className="row">
              <input
                type="checkbox"
                id={`tool-${tool.name}`}
                checked={draft.tools.includes(tool.name)}
                onChange={(event) =>
                  setDraft((current) => ({
                    ...current,
                    tools: event.target.checked
                      ? [...current.tools, tool.name]
                      : current.tools.filter((name) => name !== tool.name),
                  }))
                }
              />
              <label htmlFor={`tool-${tool.name}`}>
                {tool.name} <span className="muted">— {tool.description}</span>
              </label>
            </div>
          ))}
        </fieldset>
        <div className="row">
          <button type="submit" className="primary" disabled={save.isPending}>
            {agent ? 'Save agent' : 'Create agent'}
          </button>
          <Link className="button" to={agent ? `/agents/${agent.id}` : '/agents'}>
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
