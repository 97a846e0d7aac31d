import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { type ApiError, api, unwrap } from '../../api/client.ts';
import { Badge } from '../../ui/Badge.tsx';
import {
  formatCost,
  formatDuration,
  formatNumber,
  formatPercent,
  formatTime,
  fromLocalInput,
  toLocalInput,
} from '../../ui/format.ts';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { BarTable } from './BarTable.tsx';
import { type ChartSeries, TimeChart } from './TimeChart.tsx';

const HOUR = 3_600_000;
const PRESETS = [
  { value: '24h', label: 'Last 24 hours', span: 24 * HOUR },
  { value: '7d', label: 'Last 7 days', span: 7 * 24 * HOUR },
  { value: '30d', label: 'Last 30 days', span: 30 * 24 * HOUR },
  { value: '90d', label: 'Last 90 days', span: 90 * 24 * HOUR },
] as const;

/** The chosen range, kept in the address: a preset, or `custom` with `from` and `to`. */
function useRange() {
  const [params, setParams] = useSearchParams();
  const preset = params.get('range') ?? '24h';
  const customFrom = params.get('from') ?? '';
  const customTo = params.get('to') ?? '';
  // A preset ends now, rounded to the minute so the cached answer is reused while it is current.
  const now = Math.ceil(Date.now() / 60_000) * 60_000;
  const chosen = PRESETS.find((item) => item.value === preset);
  const from = chosen ? new Date(now - chosen.span).toISOString() : (fromLocalInput(customFrom) ?? '');
  const to = chosen ? new Date(now).toISOString() : (fromLocalInput(customTo) ?? new Date(now).toISOString());
  const span = from && to ? new Date(to).getTime() - new Date(from).getTime() : 0;
  const bucket: 'hour' | 'day' = span > 0 && span <= 3 * 24 * HOUR ? 'hour' : 'day';
  const set = (changes: Record<string, string>) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        for (const [name, value] of Object.entries(changes)) {
          if (value) next.set(name, value);
          else next.delete(name);
        }
        return next;
      },
      { replace: true },
    );
  return { preset, customFrom, customTo, from, to, bucket, set, valid: Boolean(from) && span > 0 };
}

export default function AnalyticsPage() {
  const range = useRange();
  const query = { from: range.from, to: range.to, bucket: range.bucket };
  const enabled = range.valid;
  const overview = useQuery({
    queryKey: ['analytics', 'overview', query],
    queryFn: () => unwrap(api.GET('/api/analytics/overview', { params: { query } })),
    placeholderData: keepPreviousData,
    enabled,
  });
  const costs = useQuery({
    queryKey: ['analytics', 'costs', query],
    queryFn: () => unwrap(api.GET('/api/analytics/costs', { params: { query } })),
    placeholderData: keepPreviousData,
    enabled,
  });
  const agents = useQuery({
    queryKey: ['analytics', 'agents', query],
    queryFn: () => unwrap(api.GET('/api/analytics/agents', { params: { query } })),
    placeholderData: keepPreviousData,
    enabled,
  });

  return (
    <>
      <h1>Analytics</h1>
      <form
        className="row filters range"
        aria-label="Time range"
        onSubmit={(event) => event.preventDefault()}
      >
        <div className="field">
          <label htmlFor="analytics-range">Range</label>
          <select
            id="analytics-range"
            value={range.preset}
            onChange={(event) => {
              const value = event.target.value;
              if (value === 'custom') {
                range.set({
                  range: 'custom',
                  from: toLocalInput(range.from) || '',
                  to: toLocalInput(range.to) || '',
                });
              } else range.set({ range: value === '24h' ? '' : value, from: '', to: '' });
            }}
          >
            {PRESETS.map((item) => (
              <option key={item.value} value={item.value}>
                {item.label}
              </option>
            ))}
            <option value="custom">Custom range</option>
          </select>
        </div>
        {range.preset === 'custom' && (
          <>
            <div className="field">
              <label htmlFor="analytics-from">From</label>
              <input
                id="analytics-from"
                type="datetime-local"
                value={range.customFrom}
                onChange={(event) => range.set({ from: event.target.value })}
              />
            </div>
            <div className="field">
              <label htmlFor="analytics-to">To</label>
              <input
                id="analytics-to"
                type="datetime-local"
                value={range.customTo}
                onChange={(event) => range.set({ to: event.target.value })}
              />
            </div>
          </>
        )}
      </form>
      {!range.valid && (
        <div className="alert info" role="status">
          Choose a start before the end.
        </div>
      )}
      {range.valid && (
        <p className="muted">
          {formatTime(range.from)} – {formatTime(range.to)}, by {range.bucket}
        </p>
      )}
      <Overview result={overview} />
      <Costs result={costs} />
      <Agents result={agents} />
    </>
  );
}

type Result<T> = { data?: T | undefined; error: ApiError | Error | null; isPending: boolean };
type OverviewData = Awaited<ReturnType<typeof loadOverview>>;
type CostsData = Awaited<ReturnType<typeof loadCosts>>;
type AgentsData = Awaited<ReturnType<typeof loadAgents>>;
const loadOverview = () => unwrap(api.GET('/api/analytics/overview'));
const loadCosts = () => unwrap(api.GET('/api/analytics/costs'));
const loadAgents = () => unwrap(api.GET('/api/analytics/agents'));

const formatCount = (value: number) => formatNumber(Math.round(value));
const formatMs = (value: number) => formatDuration(value);
const formatUsd = (value: number) => formatCost(value);

function Overview({ result }: { result: Result<OverviewData> }) {
  const data = result.data;
  const charts = useMemo(() => {
    if (!data) return undefined;
    const pick = (name: keyof OverviewData['series'][number]) =>
      data.series.map((point) => point[name] as number | null);
    const runs: ChartSeries[] = [
      { label: 'Completed', values: pick('completed'), color: '--ok' },
      { label: 'Failed', values: pick('failed'), color: '--bad' },
      { label: 'Cancelled', values: pick('cancelled'), color: '--muted' },
    ];
    const tokens: ChartSeries[] = [
      { label: 'Input tokens', values: pick('input_tokens'), color: '--accent' },
      { label: 'Output tokens', values: pick('output_tokens'), color: '--warn' },
    ];
    const latency: ChartSeries[] = [
      { label: 'p50', values: pick('latency_p50_ms'), color: '--accent' },
      { label: 'p95', values: pick('latency_p95_ms'), color: '--warn' },
    ];
    return { times: data.series.map((point) => point.start), runs, tokens, latency };
  }, [data]);

  return (
    <section aria-labelledby="analytics-overview">
      <h2 id="analytics-overview">Overview</h2>
      <ProblemAlert error={result.error} />
      {result.isPending && <Loading what="the overview" />}
      {data && charts && (
        <>
          <div className="grid kpis">
            <Kpi label="Runs" value={formatNumber(data.totals.runs)} />
            <Kpi label="Success rate" value={formatPercent(data.totals.success_rate)} />
            <Kpi label="Cost" value={formatCost(data.totals.cost)} />
            <Kpi
              label="Tokens in / out"
              value={`${formatNumber(data.totals.input_tokens)} / ${formatNumber(data.totals.output_tokens)}`}
            />
            <Kpi
              label="Latency p50 / p95"
              value={`${formatDuration(data.totals.latency_p50_ms)} / ${formatDuration(data.totals.latency_p95_ms)}`}
            />
            <Kpi
              label="Conversations / messages"
              value={`${formatNumber(data.totals.conversations)} / ${formatNumber(data.totals.messages)}`}
            />
          </div>
          {data.totals.runs === 0 && data.totals.messages === 0 ? (
            <Empty>No runs or conversations in this range.</Empty>
          ) : (
            <div className="charts">
              <TimeChart
                title="Runs"
                summary={`${data.totals.completed} completed, ${data.totals.failed} failed, ${data.totals.cancelled} cancelled`}
                times={charts.times}
                series={charts.runs}
                format={formatCount}
              />
              <TimeChart
                title="Tokens"
                summary={`${data.totals.input_tokens} input and ${data.totals.output_tokens} output tokens`}
                times={charts.times}
                series={charts.tokens}
                format={formatCount}
              />
              <TimeChart
                title="Latency"
                summary={`p50 ${formatDuration(data.totals.latency_p50_ms)}, p95 ${formatDuration(data.totals.latency_p95_ms)}`}
                times={charts.times}
                series={charts.latency}
                format={formatMs}
              />
            </div>
          )}
          <details className="numbers">
            <summary>Overview by {data.bucket}, as a table</summary>
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Overview by {data.bucket}</caption>
                <thead>
                  <tr>
                    <th scope="col">Start</th>
                    <th scope="col">Runs</th>
                    <th scope="col">Completed</th>
                    <th scope="col">Failed</th>
                    <th scope="col">Success rate</th>
                    <th scope="col">Tokens in / out</th>
                    <th scope="col">Cost</th>
                    <th scope="col">p50 / p95</th>
                    <th scope="col">Messages</th>
                  </tr>
                </thead>
                <tbody>
                  {data.series.map((point) => (
                    <tr key={point.start}>
                      <th scope="row">{formatTime(point.start)}</th>
                      <td>{formatNumber(point.runs)}</td>
                      <td>{formatNumber(point.completed)}</td>
                      <td>{formatNumber(point.failed)}</td>
                      <td>{formatPercent(point.success_rate)}</td>
                      <td>
                        {formatNumber(point.input_tokens)} / {formatNumber(point.output_tokens)}
                      </td>
                      <td>{formatCost(point.cost)}</td>
                      <td>
                        {formatDuration(point.latency_p50_ms)} / {formatDuration(point.latency_p95_ms)}
                      </td>
                      <td>{formatNumber(point.messages)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </section>
  );
}

function Kpi({ label, value }: { label: string; value: string }) {
  return (
    <div className="card">
      <div className="kpi-label">{label}</div>
      <div className="kpi-value">{value}</div>
    </div>
  );
}

function Costs({ result }: { result: Result<CostsData> }) {
  const data = result.data;
  const series = useMemo(
    () =>
      data ? [{ label: 'Cost', values: data.series.map((point) => point.cost), color: '--accent' }] : [],
    [data],
  );
  const times = useMemo(() => data?.series.map((point) => point.start) ?? [], [data]);
  return (
    <section aria-labelledby="analytics-costs">
      <h2 id="analytics-costs">Costs</h2>
      <ProblemAlert error={result.error} />
      {result.isPending && <Loading what="costs" />}
      {data && (
        <>
          <p>
            Total: <strong>{formatCost(data.total_cost)}</strong>
          </p>
          {data.total_cost > 0 && (
            <div className="charts">
              <TimeChart
                title="Cost over time"
                summary={`${formatCost(data.total_cost)} in total`}
                times={times}
                series={series}
                format={formatUsd}
              />
            </div>
          )}
          <div className="breakdowns">
            <BarTable
              title="Cost by provider"
              countLabel="Steps"
              rows={data.by_provider.map((row) => ({
                key: row.provider ?? '-',
                label: row.provider ?? 'unknown',
                cost: row.cost,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                count: row.steps,
              }))}
            />
            <BarTable
              title="Cost by model"
              countLabel="Steps"
              rows={data.by_model.map((row) => ({
                key: `${row.provider}/${row.model}`,
                label: `${row.provider ?? 'unknown'} / ${row.model ?? 'unknown'}`,
                cost: row.cost,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                count: row.steps,
              }))}
            />
            <BarTable
              title="Cost by agent"
              countLabel="Steps"
              rows={data.by_agent.map((row) => ({
                key: row.agent_id ?? '-',
                label: row.agent_name ?? 'deleted agent',
                cost: row.cost,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                count: row.steps,
              }))}
            />
            <BarTable
              title="Cost by workflow"
              countLabel="Runs"
              rows={data.by_workflow.map((row) => ({
                key: row.workflow_id ?? '-',
                label: row.workflow_name,
                cost: row.cost,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                count: row.runs,
              }))}
            />
          </div>
        </>
      )}
    </section>
  );
}

function Agents({ result }: { result: Result<AgentsData> }) {
  const data = result.data;
  return (
    <section aria-labelledby="analytics-agents">
      <h2 id="analytics-agents">Agents</h2>
      <ProblemAlert error={result.error} />
      {result.isPending && <Loading what="agent analytics" />}
      {data && data.items.length === 0 && <Empty>No agents yet.</Empty>}
      {data && data.items.length > 0 && (
        <div className="table-wrap">
          <table className="bars">
            <caption className="visually-hidden">Agents in this range</caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Runs</th>
                <th scope="col">Success rate</th>
                <th scope="col">Steps</th>
                <th scope="col">Tokens in / out</th>
                <th scope="col">Cost</th>
                <th scope="col">Step p50 / p95</th>
                <th scope="col">Utilisation</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((agent) => (
                <tr key={agent.agent_id}>
                  <th scope="row">
                    {agent.name} <Badge value={agent.status} />
                  </th>
                  <td>{formatNumber(agent.runs)}</td>
                  <td>{formatPercent(agent.success_rate)}</td>
                  <td>{formatNumber(agent.steps)}</td>
                  <td>
                    {formatNumber(agent.input_tokens)} / {formatNumber(agent.output_tokens)}
                  </td>
                  <td>{formatCost(agent.cost)}</td>
                  <td>
                    {formatDuration(agent.latency_p50_ms)} / {formatDuration(agent.latency_p95_ms)}
                  </td>
                  <td className="bar-cell">
                    <span className="bar" aria-hidden="true">
                      <span style={{ width: `${Math.min(100, agent.utilisation * 100)}%` }} />
                    </span>
                    {formatPercent(agent.utilisation)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
