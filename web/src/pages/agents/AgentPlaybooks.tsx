import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { Field } from '../../ui/Field.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';

type Mode = 'suggest' | 'auto';

/** The playbooks attached to an agent, and attaching or detaching one (members). */
export function AgentPlaybooks({ agentId, canEdit }: { agentId: string; canEdit: boolean }) {
  const queryClient = useQueryClient();
  const attached = useQuery({
    queryKey: ['playbooks', { agent_id: agentId }],
    queryFn: () => unwrap(api.GET('/api/playbooks', { params: { query: { agent_id: agentId, limit: 50 } } })),
  });
  const all = useQuery({
    queryKey: ['playbooks', 'all-for-attach'],
    queryFn: () => unwrap(api.GET('/api/playbooks', { params: { query: { limit: 200 } } })),
    enabled: canEdit,
  });
  const [playbookId, setPlaybookId] = useState('');
  const [mode, setMode] = useState<Mode>('suggest');
  const [when, setWhen] = useState('true');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['playbooks'] });

  const attach = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/playbooks/attach', {
          body: { playbook_id: playbookId, agent_ids: [agentId], rules: { when, mode } },
        }),
      ),
    onSuccess: () => {
      setPlaybookId('');
      return refresh();
    },
  });
  const detach = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.POST('/api/playbooks/detach', { body: { playbook_id: id, agent_ids: [agentId] } })),
    onSuccess: refresh,
  });
  const attachedIds = new Set(attached.data?.items.map((playbook) => playbook.id));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    attach.mutate();
  };

  return (
    <section aria-labelledby="agent-playbooks" className="card">
      <h2 id="agent-playbooks">Playbooks</h2>
      <ProblemAlert error={attached.error ?? detach.error} />
      {attached.isPending && <Loading what="the attached playbooks" />}
      {attached.data?.total === 0 && <Empty>No playbook is attached to this agent.</Empty>}
      <ul className="feed" aria-label="Attached playbooks">
        {attached.data?.items.map((playbook) => (
          <li key={playbook.id} className="spread">
            <Link to={`/playbooks/${playbook.id}`}>{playbook.name}</Link>
            {canEdit && (
              <button type="button" onClick={() => detach.mutate(playbook.id)} disabled={detach.isPending}>
                Detach {playbook.name}
              </button>
            )}
          </li>
        ))}
      </ul>
      {canEdit && (
        <form onSubmit={submit}>
          <h3>Attach a playbook</h3>
          <ProblemAlert error={attach.error} title="The playbook was not attached" />
          <div className="row">
            <Field label="Playbook" operation="attachPlaybook" name="playbook_id" error={attach.error}>
              {(props) => (
                <select {...props} value={playbookId} onChange={(event) => setPlaybookId(event.target.value)}>
                  <option value="">Choose a playbook…</option>
                  {all.data?.items
                    .filter((playbook) => !attachedIds.has(playbook.id))
                    .map((playbook) => (
                      <option key={playbook.id} value={playbook.id}>
                        {playbook.name}
                      </option>
                    ))}
                </select>
              )}
            </Field>
            <Field label="Mode" operation="attachPlaybook" name="rules.mode" error={attach.error}>
              {(props) => (
                <select {...props} value={mode} onChange={(event) => setMode(event.target.value as Mode)}>
                  <option value="suggest">suggest: offered to the agent</option>
                  <option value="auto">auto: its steps injected</option>
                </select>
              )}
            </Field>
          </div>
          <Field
            label="When"
            operation="attachPlaybook"
            name="rules.when"
            error={attach.error}
            hint='A condition over goal, context, inputs, tags, workflow and agent, e.g. context.severity == "high"'
          >
            {(props) => <input {...props} value={when} onChange={(event) => setWhen(event.target.value)} />}
          </Field>
          <button type="submit" disabled={!playbookId || attach.isPending}>
            Attach playbook
          </button>
        </form>
      )}
    </section>
  );
}
