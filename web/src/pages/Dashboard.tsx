import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useRef } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client.ts';
import { type ActivityEvent, useActivityFeed } from '../lib/activity.ts';
import { Badge } from '../ui/Badge.tsx';
import { formatCost, formatDuration, formatPercent, formatTime } from '../ui/format.ts';
import { Empty, Loading, ProblemAlert } from '../ui/states.tsx';

const NOT_ENOUGH = 'not enough runs yet';

/** A KPI the API may not have yet: its reason in words, never a made-up number. */
function Kpi({ label, value, reason }: { label: string; value: string | null; reason?: string | undefined }) {
  return (
    <div className="card">
      <div className="kpi-label">{label}</div>
      <div className="kpi-value">{value ?? <span className="muted">—</span>}</div>
      {value === null && <div className="muted">{reason ?? NOT_ENOUGH}</div>}
    </div>
  );
}

const RUN_KINDS = /^(workflow|agent)\./;
const DOCUMENT_KINDS = /^document\./;

export default function Dashboard() {
  const queryClient = useQueryClient();
  const metrics = useQuery({
    queryKey: ['system-metrics'],
    queryFn: () => unwrap(api.GET('/api/system/metrics')),
    refetchInterval: 15_000,
  });
  const recent = useQuery({
    queryKey: ['runs-summary'],
    queryFn: () => unwrap(api.GET('/api/runs/summary', { params: { query: { limit: 10 } } })),
  });

  // Live events refresh what they change, at most once a second.
  const pending = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const onEvent = useCallback(
    (event: ActivityEvent) => {
      if (!RUN_KINDS.test(event.kind) && !DOCUMENT_KINDS.test(event.kind)) return;
      if (pending.current) return;
      pending.current = setTimeout(() => {
        pending.current = undefined;
        void queryClient.invalidateQueries({ queryKey: ['system-metrics'] });
        void queryClient.invalidateQueries({ queryKey: ['runs-summary'] });
      }, 1000);
    },
    [queryClient],
  );
  const feed = useActivityFeed(onEvent, 15);

  const m = metrics.data;
  return (
    <>
      <h1>Dashboard</h1>
      <ProblemAlert error={metrics.error} />
      {metrics.isPending && <Loading what="the metrics" />}
      {m && (
        <>
          <section aria-labelledby="kpi-heading">
            <h2 id="kpi-heading">Last 24 hours</h2>
            <div className="grid">
              <Kpi
                label="Success rate"
                value={m.success_rate.value === null ? null : formatPercent(m.success_rate.value)}
                reason={m.success_rate.reason}
              />
              <Kpi
                label="Latency p50"
                value={m.latency_p50_ms.value === null ? null : formatDuration(m.latency_p50_ms.value)}
                reason={m.latency_p50_ms.reason}
              />
              <Kpi
                label="Latency p95"
                value={m.latency_p95_ms.value === null ? null : formatDuration(m.latency_p95_ms.value)}
                reason={m.latency_p95_ms.reason}
              />
              <Kpi
                label="Retrieval hit rate"
                value={m.retrieval_hit_rate.value === null ? null : formatPercent(m.retrieval_hit_rate.value)}
                reason={m.retrieval_hit_rate.reason ?? 'no searches yet'}
              />
              <Kpi
                label="Cost"
                value={m.cost.value === null ? null : formatCost(m.cost.value)}
                reason={m.cost.reason}
              />
            </div>
          </section>
          <section aria-labelledby="load-heading">
            <h2 id="load-heading">Now</h2>
            <div className="grid">
              <div className="card">
                <div className="kpi-label">Workflows active</div>
                <div className="kpi-value">{m.workflows.active}</div>
                <div className="row">
                  <span className="muted">
                    {m.workflows.running} running, {m.workflows.queued} queued
                  </span>
                  <Badge value={m.workflows.band} />
                </div>
              </div>
              <div className="card">
                <div className="kpi-label">Agents</div>
                <div className="kpi-value">
                  {m.agents.active} / {m.agents.total} active
                </div>
                <div className="row">
                  <span className="muted">
                    utilisation{' '}
                    {m.agents.utilisation_percent === null
                      ? '—'
                      : `${m.agents.utilisation_percent.toFixed(1)} %`}{' '}
                    (optimal 60–80 %)
                  </span>
                  {m.agents.band && <Badge value={m.agents.band} />}
                </div>
              </div>
              <div className="card">
                <div className="kpi-label">Documents</div>
                <div className="kpi-value">{m.documents.processed} processed</div>
                <div className="muted">
                  {m.documents.processing} processing, {m.documents.failed} failed
                </div>
              </div>
            </div>
          </section>
          <section aria-labelledby="status-heading" className="card">
            <div className="spread">
              <h2 id="status-heading">System status</h2>
              <Badge value={m.system.status} />
            </div>
            <dl className="facts">
              {m.system.components.map((component) => (
                <div key={component.name} className="row">
                  <dt>{component.name}</dt>
                  <dd>
                    <Badge value={component.status.replace('_', ' ')} />{' '}
                    {component.latency_ms !== undefined && (
                      <span className="muted">{Math.round(component.latency_ms)} ms</span>
                    )}
                  </dd>
                </div>
              ))}
              <div className="row">
                <dt>Uptime</dt>
                <dd>
                  {m.system.uptime_percent === null
                    ? (m.system.uptime_reason ?? 'not measured yet')
                    : `${m.system.uptime_percent.toFixed(2)} % since ${formatTime(m.system.uptime_since)}`}
                </dd>
              </div>
            </dl>
          </section>
        </>
      )}
      <div className="grid">
        <section aria-labelledby="recent-heading" className="card">
          <h2 id="recent-heading">Recent runs</h2>
          <ProblemAlert error={recent.error} />
          {recent.isPending && <Loading what="recent runs" />}
          {recent.data && recent.data.items.length === 0 && <Empty>No runs yet.</Empty>}
          <ul className="feed" aria-label="Recent runs">
            {recent.data?.items.map((run) => (
              <li key={run.id}>
                <div className="row">
                  <Link to={`/runs/${run.id}`}>{run.workflow_name}</Link>
                  <Badge value={run.status} />
                </div>
                <div className="muted">
                  {formatTime(run.created_at)} · {formatDuration(run.duration_ms)} ·{' '}
                  {run.tokens_in + run.tokens_out} tokens · {formatCost(run.cost)}
                </div>
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="activity-heading" className="card">
          <div className="spread">
            <h2 id="activity-heading">Activity</h2>
            <span className="muted" role="status">
              {feed.state === 'live' ? 'Live' : feed.state === 'closed' ? 'Disconnected' : 'Connecting…'}
            </span>
          </div>
          {feed.events.length === 0 && <Empty>No activity yet.</Empty>}
          <ul className="feed" aria-label="Activity" aria-live="polite">
            {feed.events.map((event) => (
              <li key={event.id}>
                <div>{event.message}</div>
                <div className="muted">
                  {event.kind} · {formatTime(event.created_at)}
                </div>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </>
  );
}
