import { randomUUID } from 'node:crypto';
import { type Caller, hasRole } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, invalid, invalidFields, notFound, preconditionFailed } from '../../errors.ts';
import { assign, BUCKETS, bucketOf } from '../../lib/bucketing.ts';
import { factsTooLarge, MAX_FACTS_BYTES } from '../../lib/conditions.ts';
import type { ModelRef } from '../../lib/model-ref.ts';
import {
  compareQuantile,
  compareRatio,
  decide,
  type MetricComparison,
  type RatioArm,
  sampleRatioMismatch,
} from '../../lib/stats/experiment-stats.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import {
  type AssembleInput,
  assemblePolicy,
  canonicalJson,
  checkContent,
  MissingVariableError,
  type PolicyContent,
  sha256,
} from './assemble.ts';
import {
  createPoliciesRepository,
  type ExperimentRow,
  type PoliciesRepository,
  type PolicyArmRef,
  type PolicyFilter,
  type PolicyVersionRow,
} from './policies.repository.ts';

/** What policies read of runs: per-variant sums over an experiment's units, and durations. */
export interface PolicyRunData {
  experimentData(
    workspaceId: string,
    experimentId: string,
  ): Promise<{
    sums: {
      variant: string;
      sum_success: number;
      sum_success_sq: number;
      sum_cost: number;
      sum_cost_sq: number;
      sum_runs: number;
      sum_runs_sq: number;
      sum_success_runs: number;
      sum_cost_runs: number;
    }[];
    durations: { variant: string | null; duration_ms: number | null }[];
    /** Per variant: units that searched, and their `knowledge_search` calls (y) with a result (x). */
    searches: (RatioArm & { variant: string })[];
  }>;
}

export interface PoliciesDependencies {
  db: Db;
  runs: PolicyRunData;
  /** The workspace audit trail: new policy versions, label moves and A/B test changes. */
  audit?: AuditRecorder;
}

type Who = Pick<Caller, 'workspaceId'> & RecordedBy;
type Variant = 'a' | 'b';

/** A policy id the routes use for themselves. */
const RESERVED_IDS = new Set(['abtest']);

export interface PutPolicyInput extends PolicyContent {
  labels?: string[];
}

export interface AssembleRequest extends AssembleInput {
  label?: string;
  version?: number;
  dry_run?: boolean;
}

export interface SetExperimentInput {
  policy_a: PolicyArmRef;
  policy_b: PolicyArmRef;
  weights?: number[];
  coverage?: number;
  unit?: 'conversation' | 'user';
  primary_metric?: Metric;
  guardrail_metrics?: Metric[];
  action?: 'start' | 'stop' | 'choose_winner';
  winner?: Variant;
}

/** What a run step or a chat turn hands over to assemble an agent's policy. */
export interface AgentAssemblyInput {
  workspaceId: string;
  userId: string;
  policy: { id: string; label?: string };
  agentId: string;
  conversationId?: string;
  variables: Record<string, unknown>;
  context: Record<string, unknown>;
}

/** An agent's assembled context, in the shape a model request takes. */
export interface AgentContext {
  system: string;
  messages: { role: 'user' | 'assistant'; content: string }[];
  model: ModelRef | null;
  tools: NonNullable<PolicyContent['tools']> | null;
  record: {
    policy_id: string;
    policy_version: number;
    policy_variant: string | null;
    experiment_id: string | null;
    experiment_unit: string | null;
  };
}

type Metric = 'success_rate' | 'cost_per_run' | 'p95_latency' | 'retrieval_hit_rate';

/** Why retrieval hit-rate has no per-variant value (docs/policies.md). */
export const HIT_RATE_UNAVAILABLE =
  'no knowledge_search call in the experiment’s finished runs: the hit-rate of an arm is the share of its runs’ knowledge_search calls that found at least one result';

const HIGHER_IS_BETTER: Record<Metric, boolean> = {
  success_rate: true,
  cost_per_run: false,
  p95_latency: false,
  retrieval_hit_rate: true,
};

const contentOf = (input: PutPolicyInput): PolicyContent => {
  const { labels: _labels, ...content } = input;
  return content;
};

/** The version an `If-Match` names: `3`, `"3"` or `W/"3"` all name version 3. */
const ifMatchVersion = (header: string): string => header.trim().replace(/^W\//, '').replace(/^"|"$/g, '');

const experimentView = (row: ExperimentRow) => ({
  id: row.id,
  policy_a: row.policy_a_ref,
  policy_b: row.policy_b_ref,
  weights: row.weights,
  coverage: row.coverage,
  unit: row.unit,
  primary_metric: row.primary_metric,
  guardrail_metrics: row.guardrail_metrics,
  status: row.status,
  winner: row.winner ?? null,
  started_at: row.started_at?.toISOString() ?? null,
  stopped_at: row.stopped_at?.toISOString() ?? null,
  updated_at: row.updated_at.toISOString(),
});

/**
 * Policies (docs/policies.md): versioned context recipes with movable labels, their
 * deterministic assembly, and A/B tests between two policy references.
 */
export function createPoliciesService(deps: PoliciesDependencies) {
  const repo = createPoliciesRepository(deps.db);

  function checkId(policyId: string, field = 'params.policy_id') {
    if (RESERVED_IDS.has(policyId)) throw invalid(field, `${policyId} is reserved`);
  }

  /** The version a label or a version number names; without either, production, else latest. */
  async function resolve(
    workspaceId: string,
    policyId: string,
    ref: { label?: string; version?: number },
    field = 'body',
  ): Promise<{ row: PolicyVersionRow; label: string | null }> {
    if (ref.label !== undefined && ref.version !== undefined) {
      throw invalid(`${field}.version`, 'give a label or a version, not both');
    }
    if (ref.version !== undefined) {
      const row = await repo.getVersion(workspaceId, policyId, ref.version);
      if (!row) throw notFound('policy', `${policyId} version ${ref.version}`);
      return { row, label: null };
    }
    const labels = await repo.labels(workspaceId, policyId);
    if (labels.length === 0) throw notFound('policy', policyId);
    const wanted = ref.label ?? (labels.some((l) => l.label === 'production') ? 'production' : 'latest');
    const label = labels.find((l) => l.label === wanted);
    if (!label) throw notFound('policy', `${policyId} label ${wanted}`);
    const row = await repo.getVersion(workspaceId, policyId, label.version);
    if (!row) throw notFound('policy', policyId);
    return { row, label: wanted };
  }

  /** A version as the API shows it, with every label and the version list (read through `r`). */
  async function view(r: PoliciesRepository, workspaceId: string, row: PolicyVersionRow) {
    const labels = await r.labels(workspaceId, row.policy_id);
    const versions = await r.listVersions(workspaceId, row.policy_id);
    return {
      policy_id: row.policy_id,
      version: row.version,
      content_hash: row.content_hash,
      content: row.content,
      labels: Object.fromEntries(labels.map((l) => [l.label, l.version])),
      versions: versions.map((v) => ({
        version: v.version,
        content_hash: v.content_hash,
        labels: labels.filter((l) => l.version === v.version).map((l) => l.label),
        created_by: v.created_by,
        created_at: v.created_at.toISOString(),
      })),
      created_by: row.created_by,
      created_at: row.created_at.toISOString(),
    };
  }

  /** The variant a unit gets, or undefined when coverage leaves it out of the experiment. */
  function variantOf(experiment: ExperimentRow, unitId: string): Variant | undefined {
    if (experiment.coverage < 1) {
      const covered =
        bucketOf(`${experiment.salt}:coverage`, unitId) < Math.round(experiment.coverage * BUCKETS);
      if (!covered) return undefined;
    }
    return assign(experiment.salt, unitId, experiment.weights) === 0 ? 'a' : 'b';
  }

  /**
   * Assembles the policy; `countsUnit` says whether serving an experiment's variant records the
   * unit's exposure (a run step or chat turn that runs something, or an admin's assemble), so
   * unit ids a caller merely names never enter an experiment's statistics.
   */
  async function assembleFor(caller: Who, policyId: string, input: AssembleRequest, countsUnit: boolean) {
    checkId(policyId);
    const workspaceId = caller.workspaceId;
    const userId = input.user_id ?? caller.userId;
    let served = await resolve(workspaceId, policyId, input);
    let experiment: { id: string; variant: Variant; unit: 'conversation' | 'user'; unit_id: string } | null =
      null;

    // An experiment decides what production would serve; a pinned version or another label is served as asked.
    if (input.version === undefined && (input.label === undefined || input.label === 'production')) {
      const running = await repo.runningFor(workspaceId, policyId);
      const unitId = running ? (running.unit === 'user' ? userId : input.conversation_id) : undefined;
      const variant = running && unitId !== undefined ? variantOf(running, unitId) : undefined;
      if (running && unitId !== undefined && variant) {
        const ref = variant === 'a' ? running.policy_a_ref : running.policy_b_ref;
        served = await resolve(workspaceId, ref.policy_id, ref);
        experiment = { id: running.id, variant, unit: running.unit, unit_id: unitId };
        if (countsUnit && !input.dry_run) await repo.recordExposure(workspaceId, running.id, unitId, variant);
      }
    }

    const content = served.row.content;
    const renderInput: AssembleInput = {
      ...(input.agent_id !== undefined ? { agent_id: input.agent_id } : {}),
      ...(input.conversation_id !== undefined ? { conversation_id: input.conversation_id } : {}),
      user_id: userId,
      variables: input.variables ?? {},
      context: input.context ?? {},
    };
    let assembled: ReturnType<typeof assemblePolicy>;
    try {
      assembled = assemblePolicy(content, renderInput);
    } catch (error) {
      if (!(error instanceof MissingVariableError)) throw error;
      throw new AppError(
        422,
        'policy_variable_missing',
        `the policy needs ${error.names.join(', ')}`,
        error.names.map((name) => ({
          field: `body.variables.${name}`,
          message: 'is required by the policy',
        })),
      );
    }
    const assemblyId = `asm_${sha256(
      canonicalJson({
        workspace_id: workspaceId,
        policy_id: served.row.policy_id,
        version: served.row.version,
        content_hash: served.row.content_hash,
        experiment,
        input: renderInput,
      }),
    ).slice(0, 32)}`;
    return {
      assembly_id: assemblyId,
      policy_id: served.row.policy_id,
      version: served.row.version,
      content_hash: served.row.content_hash,
      label: served.label,
      experiment,
      messages: assembled.messages,
      sections: assembled.sections,
      model: content.model ?? null,
      tools: content.tools ?? [],
      retrieval: content.retrieval ?? null,
      playbooks: content.playbooks ?? [],
      tokens: assembled.tokens,
      unresolved_variables: assembled.unresolved_variables,
      dry_run: input.dry_run === true,
    };
  }

  function metricComparisons(
    units: { a: number; b: number },
    data: Awaited<ReturnType<PolicyRunData['experimentData']>>,
  ): Record<Metric, { comparison: MetricComparison; reason: string | null }> {
    const sumsOf = (variant: Variant) => data.sums.find((s) => s.variant === variant);
    const arm = (variant: Variant, x: 'success' | 'cost'): RatioArm => {
      const s = sumsOf(variant);
      return {
        units: units[variant],
        sum_x: s ? s[`sum_${x}`] : 0,
        sum_y: s?.sum_runs ?? 0,
        sum_xx: s ? s[`sum_${x}_sq`] : 0,
        sum_yy: s?.sum_runs_sq ?? 0,
        sum_xy: s ? s[`sum_${x}_runs`] : 0,
      };
    };
    const searchArm = (variant: Variant): RatioArm => {
      const { variant: _variant, ...sums } = data.searches.find((s) => s.variant === variant) ?? {
        variant,
        units: 0,
        sum_x: 0,
        sum_y: 0,
        sum_xx: 0,
        sum_yy: 0,
        sum_xy: 0,
      };
      return sums;
    };
    const durations = (variant: Variant) =>
      data.durations
        .filter((d) => d.variant === variant && d.duration_ms !== null)
        .map((d) => d.duration_ms as number);
    const none: MetricComparison = {
      control: null,
      treatment: null,
      relative_lift: null,
      ci95: null,
      chance_to_win: null,
      expected_loss: null,
    };
    return {
      success_rate: {
        comparison: compareRatio(arm('a', 'success'), arm('b', 'success'), { higher_is_better: true }),
        reason: null,
      },
      cost_per_run: {
        comparison: compareRatio(arm('a', 'cost'), arm('b', 'cost'), { higher_is_better: false }),
        reason: null,
      },
      p95_latency: {
        comparison: compareQuantile(durations('a'), durations('b'), 0.95, { higher_is_better: false }),
        reason: null,
      },
      retrieval_hit_rate:
        data.searches.length === 0
          ? { comparison: none, reason: HIT_RATE_UNAVAILABLE }
          : {
              comparison: compareRatio(searchArm('a'), searchArm('b'), { higher_is_better: true }),
              reason: null,
            },
    };
  }

  return {
    /** The caller's workspace's policies, most recently changed first (`q`: id or description). */
    list(caller: Pick<Caller, 'workspaceId'>, filter: PolicyFilter) {
      return repo.list(caller.workspaceId, filter);
    },

    /**
     * A policy at a label or a version (production, else latest, when neither), with every
     * label and the version list. `tenant_id` only narrows: another tenant's is not found.
     */
    async get(
      caller: Pick<Caller, 'workspaceId' | 'tenantId'>,
      policyId: string,
      query: { tenant_id?: string; label?: string; version?: number },
    ) {
      if (query.tenant_id !== undefined && query.tenant_id.toLowerCase() !== caller.tenantId.toLowerCase()) {
        throw notFound('policy', policyId);
      }
      const { row } = await resolve(caller.workspaceId, policyId, query, 'query');
      return view(repo, caller.workspaceId, row);
    },

    /**
     * Adds an immutable version and moves `latest` (and the labels asked for) to it. `ifMatch`
     * names the version the writer read: another current version is 412. `created` tells a
     * new policy from a new version.
     */
    async put(caller: Who, policyId: string, input: PutPolicyInput, ifMatch?: string) {
      checkId(policyId);
      const content = contentOf(input);
      const problems = checkContent(content);
      if (problems.length > 0) throw invalidFields(problems);
      const hash = sha256(canonicalJson(content));
      return inTransaction(deps.db, async (tx) => {
        const txRepo = createPoliciesRepository(tx);
        await txRepo.lockPolicy(caller.workspaceId, policyId);
        const current = await txRepo.latestVersion(caller.workspaceId, policyId);
        if (ifMatch !== undefined && (current === undefined || ifMatchVersion(ifMatch) !== String(current))) {
          throw preconditionFailed(
            current === undefined
              ? `policy ${policyId} does not exist, so If-Match cannot match`
              : `policy ${policyId} is at version ${current}; read it again and retry`,
          );
        }
        const version = (current ?? 0) + 1;
        const row = await txRepo.insertVersion({
          workspace_id: caller.workspaceId,
          policy_id: policyId,
          version,
          content,
          content_hash: hash,
          created_by: caller.userId,
        });
        const labels = [...new Set(['latest', ...(input.labels ?? [])])];
        await txRepo.moveLabels(caller.workspaceId, policyId, labels, version, caller.userId);
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: current === undefined ? 'policy.created' : 'policy.version_created',
          targetType: 'policy',
          targetId: policyId,
          changes: {
            version: { old: current ?? null, new: version },
            labels: { new: labels },
            content_hash: { new: hash },
          },
        });
        return { created: current === undefined, policy: await view(txRepo, caller.workspaceId, row) };
      });
    },

    /**
     * `POST /policy/{id}/assemble`: renders the policy for the caller. The context and variables
     * conditions test are bounded (`MAX_FACTS_BYTES` each, else 413 naming the field): every
     * section's condition may scan them; a run's own inputs (`assembleForAgent`) were bounded by
     * the request that started it. An experiment's variant is served to anyone who may assemble,
     * but only an admin's (or owner's) assemble records an exposure: outside a run nothing is
     * run, so a member could otherwise invent conversation or user ids by the thousand and skew
     * the units, the sample-ratio check and the verdict. An integration that assembles for its
     * own model calls does so as an admin.
     */
    assemble(caller: Who & Pick<Caller, 'role'>, policyId: string, input: AssembleRequest) {
      const problems = (['context', 'variables'] as const).flatMap((field) => {
        const tooLarge = input[field] === undefined ? undefined : factsTooLarge(input[field]);
        return tooLarge ? [{ field: `body.${field}`, message: tooLarge }] : [];
      });
      if (problems.length > 0) {
        throw new AppError(
          413,
          'payload_too_large',
          `conditions test at most ${MAX_FACTS_BYTES} bytes of context and of variables`,
          problems,
        );
      }
      return assembleFor(caller, policyId, input, hasRole(caller.role, 'admin'));
    },

    /**
     * The context of an agent that has a policy, for a run step or a chat turn: the system
     * text, the other messages (examples), the model and tools when the policy sets them, and
     * what a run records (policy, version, variant, experiment, unit). Records the exposure.
     */
    async assembleForAgent(input: AgentAssemblyInput): Promise<AgentContext> {
      const result = await assembleFor(
        { workspaceId: input.workspaceId, userId: input.userId },
        input.policy.id,
        {
          ...(input.policy.label !== undefined ? { label: input.policy.label } : {}),
          agent_id: input.agentId,
          ...(input.conversationId !== undefined ? { conversation_id: input.conversationId } : {}),
          user_id: input.userId,
          variables: input.variables,
          context: input.context,
        },
        true,
      );
      const system = result.messages
        .filter((m) => m.role === 'system')
        .map((m) => m.content)
        .join('\n\n');
      return {
        system,
        messages: result.messages
          .filter((m) => m.role !== 'system')
          .map((m) => ({ role: m.role as 'user' | 'assistant', content: m.content })),
        model: result.model ? { provider: result.model.provider, name: result.model.name } : null,
        tools: result.tools.length > 0 ? result.tools : null,
        record: {
          policy_id: result.policy_id,
          policy_version: result.version,
          policy_variant: result.experiment?.variant ?? null,
          experiment_id: result.experiment?.id ?? null,
          experiment_unit: result.experiment?.unit_id ?? null,
        },
      };
    },

    /**
     * Creates or updates the experiment between two policy references, and starts, stops or
     * concludes it. Choosing a winner moves the `production` label to the winning arm.
     */
    async setExperiment(caller: Who, input: SetExperimentInput) {
      const problems: { field: string; message: string }[] = [];
      for (const side of ['policy_a', 'policy_b'] as const) {
        const ref = input[side];
        if (RESERVED_IDS.has(ref.policy_id))
          problems.push({ field: `body.${side}.policy_id`, message: 'is reserved' });
        if (ref.label !== undefined && ref.version !== undefined) {
          problems.push({ field: `body.${side}.version`, message: 'give a label or a version, not both' });
        }
      }
      const weights = input.weights ?? [50, 50];
      if (!(weights.reduce((sum, w) => sum + w, 0) > 0)) {
        problems.push({ field: 'body.weights', message: 'must not all be zero' });
      }
      if (input.action === 'choose_winner' && input.winner === undefined) {
        problems.push({ field: 'body.winner', message: 'is required with choose_winner (a or b)' });
      }
      if (input.action === 'choose_winner' && input.policy_a.policy_id !== input.policy_b.policy_id) {
        problems.push({
          field: 'body.policy_b.policy_id',
          message: 'choose_winner moves production of one policy: both arms must be of the same policy',
        });
      }
      if (problems.length > 0) throw invalidFields(problems);
      // Both arms must name something that exists now.
      const resolved: Partial<Record<Variant, PolicyVersionRow>> = {};
      for (const [side, variant] of [
        ['policy_a', 'a'],
        ['policy_b', 'b'],
      ] as const) {
        try {
          resolved[variant] = (await resolve(caller.workspaceId, input[side].policy_id, input[side])).row;
        } catch (error) {
          if (error instanceof AppError && error.status === 404) {
            problems.push({ field: `body.${side}`, message: error.message });
          } else throw error;
        }
      }
      if (problems.length > 0) throw invalidFields(problems);

      return inTransaction(deps.db, async (tx) => {
        const txRepo = createPoliciesRepository(tx);
        // Two first `set`s of one pair would both insert: the second waits and updates instead.
        await txRepo.lockPolicy(
          caller.workspaceId,
          `abtest:${input.policy_a.policy_id}:${input.policy_b.policy_id}`,
        );
        const existing = await txRepo.findExperiment(
          caller.workspaceId,
          input.policy_a.policy_id,
          input.policy_b.policy_id,
          true,
        );
        const now = new Date();
        const config = {
          policy_a_ref: input.policy_a,
          policy_b_ref: input.policy_b,
          weights: weights as [number, number],
          coverage: input.coverage ?? existing?.coverage ?? 1,
          unit: input.unit ?? existing?.unit ?? 'conversation',
          primary_metric: input.primary_metric ?? existing?.primary_metric ?? 'success_rate',
          guardrail_metrics: input.guardrail_metrics ?? existing?.guardrail_metrics ?? [],
          updated_by: caller.userId,
        };
        const action = input.action ?? (existing ? undefined : 'start');
        const status =
          action === 'start'
            ? {
                status: 'running' as const,
                started_at: existing?.status === 'running' ? existing.started_at : now,
                stopped_at: null,
                winner: null,
              }
            : action === 'stop'
              ? { status: 'stopped' as const, stopped_at: now }
              : action === 'choose_winner'
                ? { status: 'concluded' as const, stopped_at: now, winner: input.winner ?? null }
                : {};
        let row: ExperimentRow;
        if (existing) {
          row = await txRepo.updateExperiment(existing.id, { ...config, ...status });
        } else {
          row = await txRepo.insertExperiment(caller.workspaceId, {
            ...config,
            status: 'stopped',
            salt: randomUUID(),
            winner: null,
            started_at: null,
            stopped_at: null,
            policy_a: input.policy_a.policy_id,
            policy_b: input.policy_b.policy_id,
            ...status,
          });
        }
        if (action === 'choose_winner' && input.winner) {
          const winning = resolved[input.winner] as PolicyVersionRow;
          await txRepo.moveLabels(
            caller.workspaceId,
            winning.policy_id,
            ['production'],
            winning.version,
            caller.userId,
          );
        }
        const after = experimentView(row);
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: existing ? `experiment.${action ?? 'updated'}` : 'experiment.created',
          targetType: 'experiment',
          targetId: String(row.id),
          changes: changesBetween(
            existing ? (experimentView(existing) as unknown as Record<string, unknown>) : undefined,
            after as unknown as Record<string, unknown>,
          ),
        });
        return after;
      });
    },

    /** The experiment between two policies with its units, SRM check, metrics and verdict. */
    async getExperiment(caller: Pick<Caller, 'workspaceId'>, policyA: string, policyB: string) {
      const experiment = await repo.findExperiment(caller.workspaceId, policyA, policyB);
      if (!experiment) throw notFound('experiment', `${policyA} / ${policyB}`);
      const units = await repo.unitsPerVariant(experiment.id);
      const srm = sampleRatioMismatch([units.a, units.b], experiment.weights);
      const data = await deps.runs.experimentData(caller.workspaceId, experiment.id);
      const comparisons = metricComparisons(units, data);
      const primary = experiment.primary_metric as Metric;
      const guardrails = (experiment.guardrail_metrics as Metric[]).filter((m) => m !== primary);
      const metric = (name: Metric, role: 'primary' | 'guardrail') => {
        const { comparison: c, reason } = comparisons[name];
        return {
          metric: name,
          role,
          higher_is_better: HIGHER_IS_BETTER[name],
          a: c.control,
          b: c.treatment,
          relative_lift: c.relative_lift,
          ci95: c.ci95,
          chance_to_win: c.chance_to_win,
          expected_loss: c.expected_loss,
          unavailable_reason: reason,
        };
      };
      return {
        experiment: experimentView(experiment),
        units,
        srm,
        metrics: [metric(primary, 'primary'), ...guardrails.map((g) => metric(g, 'guardrail'))],
        verdict: decide({
          units: [units.a, units.b],
          srm,
          primary: comparisons[primary].comparison,
          guardrails: guardrails.map((g) => comparisons[g].comparison),
        }),
      };
    },
  };
}

export type PoliciesService = ReturnType<typeof createPoliciesService>;
