import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { Field } from '../../ui/Field.tsx';
import { formatNumber, formatPercent } from '../../ui/format.ts';
import { ProblemAlert } from '../../ui/states.tsx';
import { CATEGORIES, type Category } from './playbook-parts.tsx';

type Mine = Schemas['PlaybookMine'];
const OPERATION = 'minePlaybooks';

const RANGES = {
  last_24_hours: 'Last 24 hours',
  last_7_days: 'Last 7 days',
  last_30_days: 'Last 30 days',
  last_90_days: 'Last 90 days',
  custom: 'Custom range',
} as const;
type Range = keyof typeof RANGES;

const PHASES = { loading: 'reading the runs', mining: 'mining patterns', storing: 'storing the playbooks' };
const PHASE_STEP = { loading: 1, mining: 2, storing: 3 } as const;

/** A date-time input's local value as an ISO instant (the browser's zone), or undefined when empty. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

/**
 * The mining parameters of the spec (section 8) and the mine's progress: the console always asks
 * for a background mine (`Prefer: respond-async`) and follows it until it ends.
 */
export function MineForm() {
  const queryClient = useQueryClient();
  const [minSupport, setMinSupport] = useState('5');
  const [minConfidence, setMinConfidence] = useState('0.8');
  const [topK, setTopK] = useState('20');
  const [range, setRange] = useState<Range>('last_30_days');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [category, setCategory] = useState<Category | ''>('');
  const [mineId, setMineId] = useState<string>();

  // A mine still running when the page opens (started here before, or by someone else) is followed.
  const recent = useQuery({
    queryKey: ['playbook-mines', 'latest'],
    queryFn: () => unwrap(api.GET('/api/playbooks/mines', { params: { query: { limit: 1 } } })),
    enabled: mineId === undefined,
  });
  const latest = recent.data?.items[0];
  useEffect(() => {
    if (mineId === undefined && latest && (latest.status === 'queued' || latest.status === 'running')) {
      setMineId(latest.id);
    }
  }, [mineId, latest]);

  const mine = useQuery({
    queryKey: ['playbook-mine', mineId],
    queryFn: () => unwrap(api.GET('/api/playbooks/mines/{id}', { params: { path: { id: mineId ?? '' } } })),
    enabled: mineId !== undefined,
    refetchInterval: (query) => {
      const status = query.state.data?.status;
      return status === 'completed' || status === 'failed' ? false : 500;
    },
  });
  const ended = mine.data?.status === 'completed' || mine.data?.status === 'failed';
  useEffect(() => {
    if (ended) void queryClient.invalidateQueries({ queryKey: ['playbooks'] });
  }, [ended, queryClient]);

  const start = useMutation({
    mutationFn: () => {
      const time_range =
        range === 'custom'
          ? { from: instant(from) ?? '', ...(instant(to) ? { to: instant(to) as string } : {}) }
          : range === 'last_24_hours'
            ? { from: new Date(Date.now() - 86_400_000).toISOString() }
            : range;
      return unwrap(
        api.POST('/api/playbooks/mine', {
          params: { header: { prefer: 'respond-async' } },
          body: {
            min_support: Number(minSupport),
            min_confidence: Number(minConfidence),
            top_k: Number(topK),
            time_range,
            ...(category ? { categories: [category] } : {}),
          },
        }),
      );
    },
    onSuccess: (answer) => {
      if ('status' in answer) setMineId(answer.id);
      else void queryClient.invalidateQueries({ queryKey: ['playbooks'] });
    },
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setMineId(undefined);
    start.mutate();
  };
  const running = start.isPending || (mineId !== undefined && !ended && !mine.error);

  return (
    <section className="card" aria-labelledby="mine-heading">
      <h2 id="mine-heading">Mine playbooks</h2>
      <form onSubmit={submit}>
        <ProblemAlert error={start.error} title="Mining did not start" />
        <div className="row">
          <Field
            label="Minimum support"
            operation={OPERATION}
            name="min_support"
            error={start.error}
            hint="Successful runs a pattern needs (3 to 20)"
          >
            {(props) => (
              <input
                {...props}
                type="number"
                step={1}
                value={minSupport}
                onChange={(event) => setMinSupport(event.target.value)}
              />
            )}
          </Field>
          <Field
            label="Minimum confidence"
            operation={OPERATION}
            name="min_confidence"
            error={start.error}
            hint="P(success | pattern), 0.5 to 1.0"
          >
            {(props) => (
              <input
                {...props}
                type="number"
                step={0.05}
                value={minConfidence}
                onChange={(event) => setMinConfidence(event.target.value)}
              />
            )}
          </Field>
          <Field
            label="Playbooks to keep"
            operation={OPERATION}
            name="top_k"
            error={start.error}
            hint="The best by quality (top k)"
          >
            {(props) => (
              <input
                {...props}
                type="number"
                step={1}
                value={topK}
                onChange={(event) => setTopK(event.target.value)}
              />
            )}
          </Field>
        </div>
        <div className="row">
          <div className="field">
            <label htmlFor="mine-range">Time range</label>
            <select id="mine-range" value={range} onChange={(event) => setRange(event.target.value as Range)}>
              {Object.entries(RANGES).map(([value, words]) => (
                <option key={value} value={value}>
                  {words}
                </option>
              ))}
            </select>
          </div>
          {range === 'custom' && (
            <>
              <div className="field">
                <label htmlFor="mine-from">From</label>
                <input
                  id="mine-from"
                  type="datetime-local"
                  required
                  value={from}
                  onChange={(event) => setFrom(event.target.value)}
                />
              </div>
              <div className="field">
                <label htmlFor="mine-to">To</label>
                <input
                  id="mine-to"
                  type="datetime-local"
                  value={to}
                  onChange={(event) => setTo(event.target.value)}
                  aria-describedby="mine-to-hint"
                />
                <div className="hint" id="mine-to-hint">
                  Empty: now
                </div>
              </div>
            </>
          )}
          <div className="field">
            <label htmlFor="mine-category">Category</label>
            <select
              id="mine-category"
              value={category}
              onChange={(event) => setCategory(event.target.value as Category | '')}
            >
              <option value="">Every category</option>
              {CATEGORIES.map((value) => (
                <option key={value}>{value}</option>
              ))}
            </select>
          </div>
        </div>
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Mining…' : 'Mine playbooks'}
        </button>
      </form>
      <ProblemAlert error={mine.error} />
      {mine.data && <MineProgress mine={mine.data} />}
    </section>
  );
}

function MineProgress({ mine }: { mine: Mine }) {
  const result = mine.result;
  return (
    <div className="mine-progress" role="status" aria-live="polite">
      {(mine.status === 'queued' || mine.status === 'running') && (
        <>
          <progress
            aria-label="Mining progress"
            max={3}
            {...(mine.phase ? { value: PHASE_STEP[mine.phase] } : {})}
          />
          <p>
            {mine.status === 'queued'
              ? `Queued: ${formatNumber(mine.runs)} finished runs to mine.`
              : `Running: ${mine.phase ? PHASES[mine.phase] : 'starting'} (${formatNumber(mine.runs)} finished runs).`}
          </p>
        </>
      )}
      {mine.status === 'failed' && <p className="error-text">Mining failed: {mine.error}</p>}
      {mine.status === 'completed' && result && (
        <p>
          Mining completed: {result.playbooks.length} playbook{result.playbooks.length === 1 ? '' : 's'} from{' '}
          {formatNumber(result.runs)} finished runs ({formatNumber(result.successful_runs)} successful, base
          success rate {formatPercent(result.base_success_rate)}).
        </p>
      )}
    </div>
  );
}
