import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatCost, formatDuration, formatNumber, formatPercent, formatTime } from '../../ui/format.ts';
import { Empty, isNotFound, Loading, ProblemAlert } from '../../ui/states.tsx';
import type { Policy } from './policy-query.ts';

type ResultsOf = Awaited<ReturnType<typeof fetchResults>>;
type Metric = ResultsOf['metrics'][number];
type Arm = { policy_id: string; label?: string; version?: number };

const METRICS = ['success_rate', 'cost_per_run', 'p95_latency', 'retrieval_hit_rate'] as const;
type MetricName = (typeof METRICS)[number];
const METRIC_WORDS: Record<string, string> = {
  success_rate: 'Success rate',
  cost_per_run: 'Cost per run',
  p95_latency: 'p95 latency',
  retrieval_hit_rate: 'Retrieval hit rate',
};
const VERDICTS: Record<ResultsOf['verdict']['decision'], [string, 'ok' | 'warn' | 'bad' | 'neutral']> = {
  insufficient_data: ['Not enough data yet', 'neutral'],
  sample_ratio_mismatch: ['Sample ratio mismatch: no verdict', 'bad'],
  treatment_wins: ['B (treatment) wins', 'ok'],
  control_wins: ['A (control) wins', 'warn'],
  inconclusive: ['Inconclusive: no clear winner', 'neutral'],
  guardrail_regression: ['B regresses a guardrail', 'bad'],
};

const fetchResults = (a: string, b: string) =>
  unwrap(api.GET('/api/policy/abtest/get', { params: { query: { policy_a: a, policy_b: b } } }));

/** An arm in words: `support @ production`, `support v4`. */
const armWords = (arm: Arm) =>
  `${arm.policy_id}${arm.version !== undefined ? ` v${arm.version}` : ` @ ${arm.label ?? 'production'}`}`;

/** "latest" → a label, "4" → a version. */
const parseArm = (policyId: string, at: string): Arm => {
  const trimmed = at.trim();
  if (/^\d+$/.test(trimmed)) return { policy_id: policyId, version: Number(trimmed) };
  return { policy_id: policyId, label: trimmed || 'production' };
};

function metricValue(metric: string, value: number | null): string {
  if (value === null) return '—';
  if (metric === 'cost_per_run') return formatCost(value);
  if (metric === 'p95_latency') return formatDuration(value);
  return formatPercent(value);
}

/**
 * The A/B test between this policy (the control, A) and a treatment (B): set up, start, stop,
 * and the results with units per arm, the sample-ratio check, each metric's lift and verdict.
 */
export function AbTest({ policy }: { policy: Policy }) {
  const { can } = useWorkspace();
  const [treatment, setTreatment] = useState(policy.policy_id);
  const [shown, setShown] = useState(policy.policy_id);
  const results = useQuery({
    queryKey: ['abtest', policy.policy_id, shown],
    queryFn: () => fetchResults(policy.policy_id, shown),
    retry: false,
  });
  return (
    <section className="card" aria-labelledby="policy-abtest">
      <h2 id="policy-abtest">A/B test</h2>
      <form
        className="row"
        onSubmit={(event) => {
          event.preventDefault();
          setShown(treatment.trim() || policy.policy_id);
        }}
      >
        <div className="field">
          <label htmlFor="abtest-treatment">Treatment policy id</label>
          <input
            id="abtest-treatment"
            value={treatment}
            onChange={(event) => setTreatment(event.target.value)}
            aria-describedby="abtest-treatment-hint"
          />
          <div className="hint" id="abtest-treatment-hint">
            This policy is the control (A); the treatment (B) may be this policy at another version.
          </div>
        </div>
        <button type="submit">Show A/B test</button>
      </form>
      {results.isPending && <Loading what="the A/B test" />}
      {isNotFound(results.error) ? (
        <Empty>
          No A/B test between {policy.policy_id} and {shown} yet.
          {can('admin') ? ' Set one up below.' : ''}
        </Empty>
      ) : (
        <ProblemAlert error={results.error} />
      )}
      {results.data && <ResultsView results={results.data} />}
      {can('admin') && (
        <ExperimentForm
          key={`${shown}:${results.data?.experiment.updated_at ?? 'new'}`}
          policy={policy}
          treatmentId={shown}
          current={results.data?.experiment}
        />
      )}
    </section>
  );
}

function ResultsView({ results }: { results: ResultsOf }) {
  const { experiment, units, srm, metrics, verdict } = results;
  const [words, tone] = VERDICTS[verdict.decision];
  return (
    <div className="abtest-results">
      <p>
        <Badge value={experiment.status} tone={experiment.status === 'running' ? 'info' : 'neutral'} /> A ={' '}
        {armWords(experiment.policy_a)}, B = {armWords(experiment.policy_b)}; weights{' '}
        {experiment.weights.join(' / ')}, coverage {formatPercent(experiment.coverage, 0)}, unit{' '}
        {experiment.unit}
        {experiment.started_at ? `; started ${formatTime(experiment.started_at)}` : ''}
        {experiment.stopped_at ? `; stopped ${formatTime(experiment.stopped_at)}` : ''}
        {experiment.winner ? `; winner ${experiment.winner.toUpperCase()}` : ''}.
      </p>
      <h3>Verdict</h3>
      <p>
        <Badge value={words} tone={tone} /> {verdict.reason}
      </p>
      <dl className="facts">
        <dt>Units in A</dt>
        <dd>{formatNumber(units.a)}</dd>
        <dt>Units in B</dt>
        <dd>{formatNumber(units.b)}</dd>
        <dt>Sample ratio</dt>
        <dd>
          {srm.mismatch ? (
            <strong>
              Mismatch: the split is not what the weights ask (p &lt; 0.001); no verdict is given.
            </strong>
          ) : (
            'As the weights ask (no mismatch)'
          )}{' '}
          <span className="muted">
            χ² {srm.chi_squared.toFixed(2)}, p = {srm.p_value.toPrecision(3)}
          </span>
        </dd>
      </dl>
      <div className="table-wrap">
        <table>
          <caption>Metrics</caption>
          <thead>
            <tr>
              <th scope="col">Metric</th>
              <th scope="col">A</th>
              <th scope="col">B</th>
              <th scope="col">Lift of B</th>
              <th scope="col">95 % interval</th>
              <th scope="col">Chance B wins</th>
              <th scope="col">Expected loss</th>
            </tr>
          </thead>
          <tbody>
            {metrics.map((metric) => (
              <MetricRow key={metric.metric} metric={metric} />
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function MetricRow({ metric }: { metric: Metric }) {
  const name = (
    <th scope="row">
      {METRIC_WORDS[metric.metric] ?? metric.metric}{' '}
      <span className="muted">
        ({metric.role}, {metric.higher_is_better ? 'higher' : 'lower'} is better)
      </span>
    </th>
  );
  if (metric.unavailable_reason) {
    return (
      <tr>
        {name}
        <td colSpan={6}>Not available: {metric.unavailable_reason}</td>
      </tr>
    );
  }
  return (
    <tr>
      {name}
      <td>{metricValue(metric.metric, metric.a)}</td>
      <td>{metricValue(metric.metric, metric.b)}</td>
      <td>
        {metric.relative_lift === null
          ? '—'
          : `${metric.relative_lift >= 0 ? '+' : ''}${formatPercent(metric.relative_lift)}`}
      </td>
      <td>{metric.ci95 ? `${formatPercent(metric.ci95[0])} to ${formatPercent(metric.ci95[1])}` : '—'}</td>
      <td>{formatPercent(metric.chance_to_win)}</td>
      <td>{metric.expected_loss === null ? '—' : metric.expected_loss.toPrecision(3)}</td>
    </tr>
  );
}

type Experiment = ResultsOf['experiment'];

function ExperimentForm({
  policy,
  treatmentId,
  current,
}: {
  policy: Policy;
  treatmentId: string;
  current: Experiment | undefined;
}) {
  const queryClient = useQueryClient();
  const armAt = (arm: Arm | undefined, fallback: string) =>
    arm ? (arm.version !== undefined ? String(arm.version) : (arm.label ?? 'production')) : fallback;
  const [controlAt, setControlAt] = useState(armAt(current?.policy_a, 'production'));
  const [treatmentAt, setTreatmentAt] = useState(armAt(current?.policy_b, 'latest'));
  const [weightA, setWeightA] = useState(String(current?.weights[0] ?? 50));
  const [weightB, setWeightB] = useState(String(current?.weights[1] ?? 50));
  const [coverage, setCoverage] = useState(String(current?.coverage ?? 1));
  const [unit, setUnit] = useState<'conversation' | 'user'>(
    current?.unit === 'user' ? 'user' : 'conversation',
  );
  const [primary, setPrimary] = useState<MetricName>(
    (current?.primary_metric as MetricName) ?? 'success_rate',
  );
  const [guardrails, setGuardrails] = useState<MetricName[]>(
    (current?.guardrail_metrics as MetricName[]) ?? ['cost_per_run', 'p95_latency'],
  );
  const set = useMutation({
    mutationFn: ({ action, winner }: { action?: 'start' | 'stop' | 'choose_winner'; winner?: 'a' | 'b' }) =>
      unwrap(
        api.POST('/api/policy/abtest/set', {
          body: {
            policy_a: parseArm(policy.policy_id, controlAt),
            policy_b: parseArm(treatmentId, treatmentAt),
            weights: [Number(weightA), Number(weightB)],
            coverage: Number(coverage),
            unit,
            primary_metric: primary,
            guardrail_metrics: guardrails.filter((metric) => metric !== primary),
            ...(action ? { action } : {}),
            ...(winner ? { winner } : {}),
          },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['abtest', policy.policy_id, treatmentId] });
      // The list shows which policies have a running test; choosing a winner moves a label.
      void queryClient.invalidateQueries({ queryKey: ['policies'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    set.mutate(current ? {} : { action: 'start' });
  };
  const op = 'setPolicyExperiment';
  return (
    <form onSubmit={submit}>
      <h3>{current ? 'Change the A/B test' : 'Set up an A/B test'}</h3>
      <ProblemAlert error={set.error} title="The A/B test was not changed" />
      <div className="row">
        <div className="field">
          <label htmlFor="abtest-control-at">Control (A): {policy.policy_id} at</label>
          <input
            id="abtest-control-at"
            value={controlAt}
            onChange={(event) => setControlAt(event.target.value)}
            aria-describedby="abtest-at-hint"
          />
        </div>
        <div className="field">
          <label htmlFor="abtest-treatment-at">Treatment (B): {treatmentId} at</label>
          <input
            id="abtest-treatment-at"
            value={treatmentAt}
            onChange={(event) => setTreatmentAt(event.target.value)}
            aria-describedby="abtest-at-hint"
          />
        </div>
      </div>
      <p className="hint" id="abtest-at-hint">
        A label (production, latest) or a version number.
      </p>
      <div className="row">
        <Field label="Weight of A" operation={op} name="weights" error={set.error}>
          {(props) => (
            <input
              {...props}
              required
              type="number"
              min={0}
              value={weightA}
              onChange={(event) => setWeightA(event.target.value)}
            />
          )}
        </Field>
        <Field label="Weight of B" operation={op} name="weights" error={set.error}>
          {(props) => (
            <input
              {...props}
              required
              type="number"
              min={0}
              value={weightB}
              onChange={(event) => setWeightB(event.target.value)}
            />
          )}
        </Field>
        <Field
          label="Coverage"
          operation={op}
          name="coverage"
          error={set.error}
          hint="Share of units in the test, 0 to 1"
        >
          {(props) => (
            <input
              {...props}
              type="number"
              step={0.05}
              value={coverage}
              onChange={(event) => setCoverage(event.target.value)}
            />
          )}
        </Field>
        <div className="field">
          <label htmlFor="abtest-unit">Unit</label>
          <select
            id="abtest-unit"
            value={unit}
            onChange={(event) => setUnit(event.target.value as typeof unit)}
          >
            <option value="conversation">Conversation</option>
            <option value="user">User</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="abtest-primary">Primary metric</label>
          <select
            id="abtest-primary"
            value={primary}
            onChange={(event) => setPrimary(event.target.value as MetricName)}
          >
            {METRICS.map((metric) => (
              <option key={metric} value={metric}>
                {METRIC_WORDS[metric]}
              </option>
            ))}
          </select>
        </div>
      </div>
      <fieldset className="field">
        <legend>Guardrail metrics</legend>
        <div className="row">
          {METRICS.filter((metric) => metric !== primary).map((metric) => (
            <span key={metric} className="row">
              <input
                type="checkbox"
                id={`guardrail-${metric}`}
                checked={guardrails.includes(metric)}
                onChange={(event) =>
                  setGuardrails((now) =>
                    event.target.checked ? [...now, metric] : now.filter((item) => item !== metric),
                  )
                }
              />
              <label htmlFor={`guardrail-${metric}`}>{METRIC_WORDS[metric]}</label>
            </span>
          ))}
        </div>
      </fieldset>
      <div className="row">
        <button type="submit" className="primary" disabled={set.isPending}>
          {current ? 'Save A/B test' : 'Start A/B test'}
        </button>
        {current?.status === 'running' && (
          <button
            type="button"
            className="danger"
            disabled={set.isPending}
            onClick={() => set.mutate({ action: 'stop' })}
          >
            Stop A/B test
          </button>
        )}
        {current && current.status !== 'running' && (
          <button type="button" disabled={set.isPending} onClick={() => set.mutate({ action: 'start' })}>
            Start A/B test
          </button>
        )}
      </div>
      {current &&
        current.status !== 'concluded' &&
        current.policy_a.policy_id === current.policy_b.policy_id && (
          <div className="row">
            {(['a', 'b'] as const).map((arm) => (
              <ConfirmButton
                key={arm}
                label={`Choose ${arm.toUpperCase()} as the winner`}
                question={`Move ${policy.policy_id}'s production label to ${armWords(arm === 'a' ? current.policy_a : current.policy_b)} and conclude the test?`}
                confirmLabel={`Yes, ${arm.toUpperCase()} wins`}
                onConfirm={() => set.mutate({ action: 'choose_winner', winner: arm })}
                disabled={set.isPending}
              />
            ))}
          </div>
        )}
    </form>
  );
}
