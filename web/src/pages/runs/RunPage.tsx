import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { followEvents, type StreamEvent } from '../../lib/event-stream.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatCost, formatDuration, formatTime } from '../../ui/format.ts';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';

type RunWithSteps = Schemas['RunWithSteps'];
type Status = RunWithSteps['status'];

const FINAL: readonly Status[] = ['Completed', 'Failed', 'Cancelled'];
const CAN_CANCEL: readonly Status[] = ['Queued', 'Running', 'Paused'];
const CAN_PAUSE: readonly Status[] = ['Queued', 'Running'];

/** One line of the run's log as it arrives. */
interface LoggedEvent {
  id: string;
  name: string;
  at: string | undefined;
  summary: string;
}

function summarize(event: StreamEvent): string {
  const data = (event.data ?? {}) as Record<string, unknown>;
  switch (event.event) {
    case 'step.started':
      return `step ${Number(data.position) + 1} started${typeof data.agent === 'string' ? ` (${data.agent})` : ''}`;
    case 'step.completed':
      return `step ${Number(data.position) + 1} completed${data.model ? ` by ${data.provider}/${data.model}` : ''}`;
    case 'step.failed':
      return `step ${Number(data.position) + 1} failed: ${String(data.error ?? '')}`;
    case 'tool_call':
      return `tool ${String(data.name)}${data.error ? ` failed: ${String(data.error)}` : ''}`;
    default:
      return event.event.replace('.', ' ');
  }
}

/**
 * A run, followed live over its event stream: each event is shown as it arrives, and the run
 * with its steps is read again after it. The controls are enabled only where the run's status
 * allows them.
 */
export default function RunPage() {
  const { id = '' } = useParams();
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const run = useQuery({
    queryKey: ['run', id],
    queryFn: () => unwrap(api.GET('/api/runs/{id}', { params: { path: { id } } })),
  });
  const [log, setLog] = useState<LoggedEvent[]>([]);
  const [streamError, setStreamError] = useState<unknown>();
  const refetch = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const found = run.data !== undefined;

  useEffect(() => {
    if (!found) return;
    const key = ['run', id];
    const controller = new AbortController();
    const seen = new Set<string>();
    followEvents(
      `/api/runs/${id}/events`,
      (event) => {
        if (event.event === 'run') return undefined;
        if (event.event === 'error') {
          setStreamError(
            new Error(String((event.data as { message?: string })?.message ?? 'the stream failed')),
          );
          return 'stop';
        }
        if (event.id && seen.has(event.id)) return undefined;
        if (event.id) seen.add(event.id);
        setLog((current) => [
          ...current,
          {
            id: event.id ?? String(current.length),
            name: event.event,
            at: (event.data as { created_at?: string })?.created_at,
            summary: summarize(event),
          },
        ]);
        // The run and its steps as they are now, at most every 150 ms.
        if (!refetch.current) {
          refetch.current = setTimeout(() => {
            refetch.current = undefined;
            void queryClient.invalidateQueries({ queryKey: key });
          }, 150);
        }
        return event.event === 'run.completed' ||
          event.event === 'run.failed' ||
          event.event === 'run.cancelled'
          ? 'stop'
          : undefined;
      },
      controller.signal,
    )
      .then(() => queryClient.invalidateQueries({ queryKey: key }))
      .catch((error: unknown) => {
        if (!controller.signal.aborted) setStreamError(error);
      });
    return () => {
      controller.abort();
      clearTimeout(refetch.current);
      refetch.current = undefined;
    };
  }, [id, found, queryClient]);

  const control = useMutation({
    mutationFn: (action: 'cancel' | 'pause' | 'resume') =>
      unwrap(
        action === 'cancel'
          ? api.POST('/api/runs/{id}/cancel', { params: { path: { id } } })
          : action === 'pause'
            ? api.POST('/api/runs/{id}/pause', { params: { path: { id } } })
            : api.POST('/api/runs/{id}/resume', { params: { path: { id } } }),
      ),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['run', id] }),
  });

  if (run.isPending) return <Loading what="the run" />;
  if (isNotFound(run.error)) {
    return (
      <>
        <h1>Run not found</h1>
        <p>
          No run with this id exists in this workspace. <Link to="/runs">All runs</Link>
        </p>
      </>
    );
  }
  if (!run.data) return <ProblemAlert error={run.error} />;
  const r = run.data;
  const status = r.status;
  return (
    <>
      <div className="spread">
        <h1>
          Run of{' '}
          {r.workflow_id ? (
            <Link to={`/workflows/${r.workflow_id}`}>{r.workflow_name}</Link>
          ) : (
            r.workflow_name
          )}{' '}
          <Badge value={status} />
        </h1>
        {can('member') && (
          <div className="row">
            <button
              type="button"
              onClick={() => control.mutate('pause')}
              disabled={!CAN_PAUSE.includes(status) || r.control !== null || control.isPending}
            >
              Pause run
            </button>
            <button
              type="button"
              onClick={() => control.mutate('resume')}
              disabled={status !== 'Paused' || control.isPending}
            >
              Resume run
            </button>
            <button
              type="button"
              className="danger"
              onClick={() => control.mutate('cancel')}
              disabled={!CAN_CANCEL.includes(status) || r.control === 'cancel' || control.isPending}
            >
              Cancel run
            </button>
          </div>
        )}
      </div>
      <ProblemAlert error={control.error} title="The run did not change" />
      <ProblemAlert error={streamError} title="Live updates stopped" />
      {r.control && !FINAL.includes(status) && (
        <div className="alert info" role="status">
          {r.control === 'pause' ? 'Pausing after the current step…' : 'Cancelling…'}
        </div>
      )}
      <div className="grid">
        <div className="card">
          <div className="kpi-label">Duration</div>
          <div className="kpi-value">{formatDuration(r.duration_ms)}</div>
        </div>
        <div className="card">
          <div className="kpi-label">Tokens</div>
          <div className="kpi-value">{r.tokens_in + r.tokens_out}</div>
          <div className="muted">
            {r.tokens_in} in, {r.tokens_out} out
          </div>
        </div>
        <div className="card">
          <div className="kpi-label">Cost</div>
          <div className="kpi-value">{formatCost(r.cost)}</div>
        </div>
        <div className="card">
          <div className="kpi-label">Started</div>
          <div>{formatTime(r.started_at ?? r.created_at)}</div>
        </div>
      </div>
      {r.error && (
        <div className="alert" role="alert">
          <strong>{r.failure_reason ?? 'Failed'}</strong>: {r.error}
        </div>
      )}
      <section aria-labelledby="steps-heading">
        <h2 id="steps-heading">Steps</h2>
        {r.steps.length === 0 && (
          <Empty>{FINAL.includes(status) ? 'No steps ran.' : 'Waiting for the first step…'}</Empty>
        )}
        <ol className="stack" aria-label="Steps">
          {r.steps.map((step) => (
            <li key={step.id} className="card">
              <div className="spread">
                <h3>
                  Step {step.position + 1}
                  {step.agent_name ? `: ${step.agent_name}` : ''}
                  {step.attempt > 1 ? ` (attempt ${step.attempt})` : ''}
                </h3>
                <Badge value={step.status} />
              </div>
              <div className="muted">
                {step.provider ? `${step.provider} / ${step.model}` : ''} · {step.tokens_in + step.tokens_out}{' '}
                tokens · {formatCost(step.cost)} · {formatDuration(step.latency_ms)}
              </div>
              {step.degraded && (
                <div className="alert info">
                  Answered by the built-in local provider: {String(step.degraded)}
                </div>
              )}
              {step.tool_calls.length > 0 && (
                <details>
                  <summary>{step.tool_calls.length} tool call(s)</summary>
                  <pre>{JSON.stringify(step.tool_calls, null, 2)}</pre>
                </details>
              )}
              {step.output && <pre>{step.output}</pre>}
              {step.error && <div className="error-text">{step.error}</div>}
            </li>
          ))}
        </ol>
      </section>
      {r.output && (
        <section aria-labelledby="output-heading" className="card">
          <h2 id="output-heading">Output</h2>
          <pre>{r.output}</pre>
        </section>
      )}
      <section aria-labelledby="events-heading">
        <h2 id="events-heading">Events</h2>
        <ol className="feed" aria-label="Run events" aria-live="polite">
          {log.map((event) => (
            <li key={event.id}>
              <strong>{event.summary}</strong> <span className="muted">{formatTime(event.at)}</span>
            </li>
          ))}
        </ol>
      </section>
    </>
  );
}
