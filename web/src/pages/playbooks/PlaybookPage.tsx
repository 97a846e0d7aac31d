import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, Fragment, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { goalPlaceholders } from '../../lib/placeholders.ts';
import { Badge } from '../../ui/Badge.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatCost, formatDuration, formatPercent, formatTime } from '../../ui/format.ts';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import { RunTable } from '../runs/RunTable.tsx';
import { ConfidenceBadge, type Playbook } from './playbook-parts.tsx';

const QUALITY_PARTS = [
  ['reliability', 'Reliability', 'Wilson lower bound of the success rate'],
  ['evidence', 'Evidence', 'how many successful runs back it'],
  ['lift', 'Lift', 'success gained over the workspace'],
  ['cost', 'Cost', 'cheaper than the average run: above 50 %'],
  ['speed', 'Speed', 'faster than the average run: above 50 %'],
] as const;

/** `/playbooks/:id`: a playbook's figures, pattern and example runs; promote, attach, archive. */
export default function PlaybookPage() {
  const { id = '' } = useParams();
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const playbook = useQuery({
    queryKey: ['playbook', id],
    queryFn: () => unwrap(api.GET('/api/playbooks/{id}', { params: { path: { id } } })),
  });
  const archive = useMutation({
    mutationFn: (archived: boolean) =>
      archived
        ? unwrap(api.POST('/api/playbooks/{id}/unarchive', { params: { path: { id } } }))
        : unwrap(api.POST('/api/playbooks/{id}/archive', { params: { path: { id } } })),
    onSuccess: (saved) => {
      queryClient.setQueryData(['playbook', id], saved);
      void queryClient.invalidateQueries({ queryKey: ['playbooks'] });
    },
  });

  if (playbook.isPending) return <Loading what="the playbook" />;
  if (isNotFound(playbook.error)) {
    return (
      <>
        <h1>Playbook not found</h1>
        <p>
          No playbook with this id exists in this workspace. <Link to="/playbooks">All playbooks</Link>
        </p>
      </>
    );
  }
  if (!playbook.data) return <ProblemAlert error={playbook.error} />;
  const p = playbook.data;
  const configuration = Object.entries(p.context_pattern.configuration);
  return (
    <>
      <div className="spread">
        <h1>{p.name}</h1>
        {can('member') && (
          <button type="button" onClick={() => archive.mutate(p.archived)} disabled={archive.isPending}>
            {p.archived ? 'Unarchive playbook' : 'Archive playbook'}
          </button>
        )}
      </div>
      <p className="row">
        {p.category && <Badge value={p.category} tone="info" />}
        <ConfidenceBadge playbook={p} />
        {p.archived && <Badge value={`archived ${formatTime(p.archived_at)}`} tone="neutral" />}
      </p>
      <ProblemAlert error={archive.error} title="The playbook was not changed" />
      <p>{p.description}</p>
      <section className="card" aria-labelledby="playbook-figures">
        <h2 id="playbook-figures">Figures</h2>
        <dl className="facts">
          <dt>Confidence</dt>
          <dd>{formatPercent(p.confidence)}</dd>
          <dt>Support</dt>
          <dd>
            {p.support} successful of {p.matching_runs} matching runs
          </dd>
          <dt>Success rate</dt>
          <dd>{formatPercent(p.success_rate)}</dd>
          <dt>Lift</dt>
          <dd>{p.lift.toFixed(2)} × the workspace's success rate</dd>
          <dt>Avg duration</dt>
          <dd>{formatDuration(p.avg_duration_ms)}</dd>
          <dt>Avg cost</dt>
          <dd>{formatCost(p.avg_cost)}</dd>
          <dt>Quality</dt>
          <dd>{formatPercent(p.quality_score, 0)}</dd>
          <dt>Used by</dt>
          <dd>
            {p.usage_count} run{p.usage_count === 1 ? '' : 's'} of promoted workflows
          </dd>
          <dt>Mined</dt>
          <dd>{formatTime(p.mined_at)}</dd>
        </dl>
        <h3>Quality parts</h3>
        <dl className="facts">
          {QUALITY_PARTS.map(([key, label, meaning]) => (
            <Fragment key={key}>
              <dt>{label}</dt>
              <dd>
                {formatPercent(p.quality_parts[key], 0)} <span className="muted">— {meaning}</span>
              </dd>
            </Fragment>
          ))}
        </dl>
      </section>
      <section className="card" aria-labelledby="playbook-pattern">
        <h2 id="playbook-pattern">Pattern</h2>
        <dl className="facts">
          <dt>Agents</dt>
          <dd>{p.agent_pattern.join(' → ') || '—'}</dd>
          <dt>Tools</dt>
          <dd>{p.tool_pattern.join(', ') || 'none'}</dd>
          <dt>Context fields</dt>
          <dd>{p.context_pattern.context_fields.join(', ') || 'none'}</dd>
          <dt>Required inputs</dt>
          <dd>{p.context_pattern.required_inputs.join(', ') || 'none'}</dd>
          <dt>Configuration</dt>
          <dd>{configuration.length ? configuration.map(([k, v]) => `${k}: ${v}`).join(', ') : 'any'}</dd>
        </dl>
        <h3>Goal template</h3>
        <pre>{p.goal_template}</pre>
        <h3>Mined items</h3>
        <ul className="chips" aria-label="Mined items">
          {p.items.map((item) => (
            <li key={item}>
              <code>{item}</code>
            </li>
          ))}
        </ul>
        {p.category_votes.length > 0 && (
          <>
            <h3>Why this category</h3>
            <ul>
              {p.category_votes.map((vote) => (
                <li key={vote.category}>
                  {vote.category}: {vote.score} <span className="muted">({vote.because.join(', ')})</span>
                </li>
              ))}
            </ul>
          </>
        )}
      </section>
      <ExampleRuns ids={p.example_run_ids} />
      {can('member') && <PromoteForm playbook={p} />}
      <Attachments playbook={p} canEdit={can('member')} />
    </>
  );
}

function ExampleRuns({ ids }: { ids: string[] }) {
  const runs = useQueries({
    queries: ids.map((id) => ({
      queryKey: ['run', id],
      queryFn: () => unwrap(api.GET('/api/runs/{id}', { params: { path: { id } } })),
      retry: false,
    })),
  });
  const found = runs.flatMap((run) => (run.data ? [run.data] : []));
  const pending = runs.some((run) => run.isPending);
  return (
    <section aria-labelledby="playbook-examples">
      <h2 id="playbook-examples">Example runs</h2>
      {pending && <Loading what="example runs" />}
      {!pending && found.length === 0 && <Empty>No example run is kept any more.</Empty>}
      {found.length > 0 && <RunTable runs={found} caption="Successful runs matching the playbook" />}
    </section>
  );
}

type Option = 'create_only' | 'create_and_execute' | 'save_as_template';
const OPTIONS: [Option, string][] = [
  ['create_only', 'Create the workflow'],
  ['create_and_execute', 'Create the workflow and run it'],
  ['save_as_template', 'Save as a workflow template'],
];

function PromoteForm({ playbook }: { playbook: Playbook }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [option, setOption] = useState<Option>('create_only');
  const [inputs, setInputs] = useState<Record<string, string>>({});
  const placeholders = goalPlaceholders(playbook.goal_template);
  const promote = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/playbooks/promote', {
          body: {
            playbook_id: playbook.id,
            option,
            ...(name.trim() ? { name: name.trim() } : {}),
            ...(option === 'create_and_execute' ? { inputs } : {}),
          },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['workflows'] });
      void queryClient.invalidateQueries({ queryKey: ['runs'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    promote.mutate();
  };
  const done = promote.data;
  return (
    <section className="card" aria-labelledby="playbook-promote">
      <h2 id="playbook-promote">Promote to a workflow</h2>
      <form onSubmit={submit}>
        <ProblemAlert error={promote.error} title="The playbook was not promoted" />
        <Field
          label="Workflow name"
          operation="promotePlaybook"
          name="name"
          error={promote.error}
          hint="Empty: the playbook's name"
        >
          {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
        </Field>
        <fieldset className="field">
          <legend>What to do</legend>
          {OPTIONS.map(([value, words]) => (
            <div key={value} className="row">
              <input
                type="radio"
                id={`promote-${value}`}
                name="promote-option"
                value={value}
                checked={option === value}
                onChange={() => setOption(value)}
              />
              <label htmlFor={`promote-${value}`}>{words}</label>
            </div>
          ))}
        </fieldset>
        {option === 'create_and_execute' &&
          placeholders.map((placeholder) => (
            <Field
              key={placeholder}
              label={placeholder}
              operation="promotePlaybook"
              name={`inputs.${placeholder}`}
              error={promote.error}
              hint="Fills the goal template"
            >
              {(props) => (
                <input
                  {...props}
                  required
                  value={inputs[placeholder] ?? ''}
                  onChange={(event) =>
                    setInputs((current) => ({ ...current, [placeholder]: event.target.value }))
                  }
                />
              )}
            </Field>
          ))}
        <button type="submit" className="primary" disabled={promote.isPending}>
          Promote playbook
        </button>
      </form>
      {done && (
        <p role="status">
          Created{done.workflow.is_template ? ' the template' : ''}{' '}
          <Link to={`/workflows/${done.workflow.id}`}>{done.workflow.name}</Link>
          {done.run && (
            <>
              {' '}
              and started <Link to={`/runs/${done.run.id}`}>its run</Link>
            </>
          )}
          .
        </p>
      )}
    </section>
  );
}

type Mode = 'suggest' | 'auto';

function Attachments({ playbook, canEdit }: { playbook: Playbook; canEdit: boolean }) {
  const queryClient = useQueryClient();
  const key = ['playbook-attachments', playbook.id];
  const attachments = useQuery({
    queryKey: key,
    queryFn: () =>
      unwrap(api.GET('/api/playbooks/{id}/attachments', { params: { path: { id: playbook.id } } })),
  });
  const agents = useQuery({
    queryKey: ['agents', 'all'],
    queryFn: () => unwrap(api.GET('/api/agents', { params: { query: { limit: 100 } } })),
    enabled: canEdit,
  });
  const names = new Map(agents.data?.items.map((agent) => [agent.id, agent.name]));
  const [chosen, setChosen] = useState<string[]>([]);
  const [when, setWhen] = useState('');
  const [mode, setMode] = useState<Mode>('suggest');
  const attach = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/playbooks/attach', {
          body: {
            playbook_id: playbook.id,
            agent_ids: chosen,
            rules: { mode, ...(when.trim() ? { when: when.trim() } : {}) },
          },
        }),
      ),
    onSuccess: (result) => {
      queryClient.setQueryData(key, result);
      setChosen([]);
    },
  });
  const detach = useMutation({
    mutationFn: (agentId: string) =>
      unwrap(api.POST('/api/playbooks/detach', { body: { playbook_id: playbook.id, agent_ids: [agentId] } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: key }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    attach.mutate();
  };
  const list = attachments.data?.attachments ?? [];
  return (
    <section className="card" aria-labelledby="playbook-attachments">
      <h2 id="playbook-attachments">Attached to agents</h2>
      <ProblemAlert error={attachments.error ?? detach.error} />
      {attachments.isPending && <Loading what="attachments" />}
      {attachments.data && list.length === 0 && <Empty>Not attached to any agent.</Empty>}
      {list.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Agents the playbook is attached to</caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Rule</th>
                <th scope="col">Mode</th>
                <th scope="col">Triggers</th>
                {canEdit && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {list.map((attachment) => {
                const agentName = names.get(attachment.agent_id) ?? attachment.agent_id.slice(0, 8);
                return (
                  <tr key={attachment.id}>
                    <td>
                      <Link to={`/agents/${attachment.agent_id}`}>{agentName}</Link>
                    </td>
                    <td>
                      <code>{attachment.when}</code>
                    </td>
                    <td>{attachment.mode}</td>
                    <td>{attachment.triggers}</td>
                    {canEdit && (
                      <td>
                        <button
                          type="button"
                          onClick={() => detach.mutate(attachment.agent_id)}
                          disabled={detach.isPending}
                        >
                          Detach from {agentName}
                        </button>
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {canEdit && (
        <form onSubmit={submit}>
          <h3>Attach to agents</h3>
          <ProblemAlert error={attach.error} title="The playbook was not attached" />
          <fieldset className="field">
            <legend>Agents</legend>
            {agents.isPending && <Loading what="agents" />}
            {agents.data?.items.length === 0 && <Empty>No agents in this workspace.</Empty>}
            {agents.data?.items.map((agent) => (
              <div key={agent.id} className="row">
                <input
                  type="checkbox"
                  id={`attach-${agent.id}`}
                  checked={chosen.includes(agent.id)}
                  onChange={(event) =>
                    setChosen((current) =>
                      event.target.checked ? [...current, agent.id] : current.filter((x) => x !== agent.id),
                    )
                  }
                />
                <label htmlFor={`attach-${agent.id}`}>{agent.name}</label>
              </div>
            ))}
          </fieldset>
          <div className="row">
            <Field
              label="When"
              operation="attachPlaybook"
              name="rules.when"
              error={attach.error}
              hint='A condition over goal, context, inputs, tags, workflow and agent, e.g. goal contains "audit"; empty: always'
            >
              {(props) => (
                <input
                  {...props}
                  required={false}
                  value={when}
                  onChange={(event) => setWhen(event.target.value)}
                />
              )}
            </Field>
            <div className="field">
              <label htmlFor="attach-mode">Mode</label>
              <select id="attach-mode" value={mode} onChange={(event) => setMode(event.target.value as Mode)}>
                <option value="suggest">Suggest (name and description in the prompt)</option>
                <option value="auto">Auto (its steps in the prompt)</option>
              </select>
            </div>
          </div>
          <button type="submit" disabled={attach.isPending || chosen.length === 0}>
            Attach to agents
          </button>
        </form>
      )}
    </section>
  );
}
