import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { likePattern, type PageRequest, paginate, totalCount } from '../../db/queries.ts';
import {
  type PolicyArmRef,
  policyExperiments,
  policyExposures,
  policyLabels,
  policyVersions,
} from '../../db/schema/policies.ts';
import type { Db } from '../../db/transaction.ts';

export type PolicyVersionRow = typeof policyVersions.$inferSelect;
export type PolicyLabelRow = typeof policyLabels.$inferSelect;
export type ExperimentRow = typeof policyExperiments.$inferSelect;
export type ExperimentWrite = Omit<ExperimentRow, 'id' | 'workspace_id' | 'created_at' | 'updated_at'>;
export type { PolicyArmRef };

/** What the list of policies asks for: a page and an optional search. */
export interface PolicyFilter extends PageRequest {
  q?: string;
}

/** Data access for policies, their labels, experiments and exposures. */
export function createPoliciesRepository(db: Db) {
  return {
    /** Serialises writes of one policy until the transaction ends (also for a policy not yet stored). */
    async lockPolicy(workspaceId: string, policyId: string): Promise<void> {
      await db.execute(sql`select pg_advisory_xact_lock(hashtext(${`policy:${workspaceId}:${policyId}`}))`);
    },

    async latestVersion(workspaceId: string, policyId: string): Promise<number | undefined> {
      const [row] = await db
        .select({ version: sql<number>`max(${policyVersions.version})` })
        .from(policyVersions)
        .where(and(eq(policyVersions.workspace_id, workspaceId), eq(policyVersions.policy_id, policyId)));
      return row?.version ?? undefined;
    },

    /**
     * The workspace's policies, one row each (its latest version), most recently changed first:
     * the latest version's description, every label, when a version or a label last changed, and
     * whether a running A/B test has the policy as one of its arms. `q` matches the id or the
     * latest version's description, case-insensitive.
     */
    async list(workspaceId: string, filter: PolicyFilter) {
      const latest = sql`${policyVersions.version} = (select max(v2.version) from ${policyVersions} v2
        where v2.workspace_id = ${policyVersions.workspace_id} and v2.policy_id = ${policyVersions.policy_id})`;
      const description = sql<string | null>`${policyVersions.content}->>'description'`;
      const pattern = filter.q ? likePattern(filter.q) : undefined;
      const where = and(
        eq(policyVersions.workspace_id, workspaceId),
        latest,
        pattern
          ? sql`(${policyVersions.policy_id} ilike ${pattern} or ${description} ilike ${pattern})`
          : undefined,
      );
      const labelsOf = sql`from ${policyLabels} l
        where l.workspace_id = ${policyVersions.workspace_id} and l.policy_id = ${policyVersions.policy_id}`;
      const updatedAt = sql<Date>`greatest(${policyVersions.created_at}, (select max(l.updated_at) ${labelsOf}))`;
      const rows = await db
        .select({
          policy_id: policyVersions.policy_id,
          description,
          latest_version: policyVersions.version,
          labels: sql<
            Record<string, number>
          >`coalesce((select jsonb_object_agg(l.label, l.version) ${labelsOf}), '{}'::jsonb)`,
          updated_at: updatedAt.mapWith((value: Date | string) => new Date(value)),
          experiment_running: sql<boolean>`exists (select 1 from ${policyExperiments} e
            where e.workspace_id = ${policyVersions.workspace_id} and e.status = 'running'
              and (e.policy_a = ${policyVersions.policy_id} or e.policy_b = ${policyVersions.policy_id}))`,
          total: totalCount(),
        })
        .from(policyVersions)
        .where(where)
        .orderBy(desc(updatedAt), asc(policyVersions.policy_id))
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [row] = await db
          .select({ value: sql<number>`count(*)`.mapWith(Number) })
          .from(policyVersions)
          .where(where);
        return row?.value ?? 0;
      });
    },

    async getVersion(workspaceId: string, policyId: string, version: number) {
      const [row] = await db
        .select()
        .from(policyVersions)
        .where(
          and(
            eq(policyVersions.workspace_id, workspaceId),
            eq(policyVersions.policy_id, policyId),
            eq(policyVersions.version, version),
          ),
        );
      return row;
    },

    /** Every version of a policy in the given workspaces, newest first (without content). */
    listVersions(workspaceId: string, policyId: string) {
      return db
        .select({
          version: policyVersions.version,
          content_hash: policyVersions.content_hash,
          created_by: policyVersions.created_by,
          created_at: policyVersions.created_at,
        })
        .from(policyVersions)
        .where(and(eq(policyVersions.workspace_id, workspaceId), eq(policyVersions.policy_id, policyId)))
        .orderBy(desc(policyVersions.version));
    },

    async insertVersion(row: Omit<PolicyVersionRow, 'created_at'>): Promise<PolicyVersionRow> {
      const [inserted] = await db.insert(policyVersions).values(row).returning();
      return inserted as PolicyVersionRow;
    },

    labels(workspaceId: string, policyId: string): Promise<PolicyLabelRow[]> {
      return db
        .select()
        .from(policyLabels)
        .where(and(eq(policyLabels.workspace_id, workspaceId), eq(policyLabels.policy_id, policyId)))
        .orderBy(asc(policyLabels.label));
    },

    /** Points each label at `version` (creating the labels that do not exist). */
    async moveLabels(
      workspaceId: string,
      policyId: string,
      labels: string[],
      version: number,
      by: string,
    ): Promise<void> {
      if (labels.length === 0) return;
      await db
        .insert(policyLabels)
        .values(
          labels.map((label) => ({
            workspace_id: workspaceId,
            policy_id: policyId,
            label,
            version,
            updated_by: by,
          })),
        )
        .onConflictDoUpdate({
          target: [policyLabels.workspace_id, policyLabels.policy_id, policyLabels.label],
          set: { version, updated_by: by, updated_at: sql`now()` },
        });
    },

    async findExperiment(workspaceId: string, policyA: string, policyB: string, lock = false) {
      const query = db
        .select()
        .from(policyExperiments)
        .where(
          and(
            eq(policyExperiments.workspace_id, workspaceId),
            eq(policyExperiments.policy_a, policyA),
            eq(policyExperiments.policy_b, policyB),
          ),
        );
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    /** The running experiment whose control (a) is this policy, if any (the oldest when several). */
    async runningFor(workspaceId: string, policyId: string): Promise<ExperimentRow | undefined> {
      const [row] = await db
        .select()
        .from(policyExperiments)
        .where(
          and(
            eq(policyExperiments.workspace_id, workspaceId),
            eq(policyExperiments.policy_a, policyId),
            eq(policyExperiments.status, 'running'),
          ),
        )
        .orderBy(asc(policyExperiments.created_at), asc(policyExperiments.id))
        .limit(1);
      return row;
    },

    async insertExperiment(workspaceId: string, write: ExperimentWrite): Promise<ExperimentRow> {
      const [row] = await db
        .insert(policyExperiments)
        .values({ workspace_id: workspaceId, ...write })
        .returning();
      return row as ExperimentRow;
    },

    async updateExperiment(id: string, write: Partial<ExperimentWrite>): Promise<ExperimentRow> {
      const [row] = await db
        .update(policyExperiments)
        .set({ ...write, updated_at: sql`now()` })
        .where(eq(policyExperiments.id, id))
        .returning();
      return row as ExperimentRow;
    },

    /** Records a unit's first exposure; a unit already exposed keeps its first record. */
    async recordExposure(workspaceId: string, experimentId: string, unitId: string, variant: 'a' | 'b') {
      await db
        .insert(policyExposures)
        .values({ workspace_id: workspaceId, experiment_id: experimentId, unit_id: unitId, variant })
        .onConflictDoNothing();
    },

    /** Distinct exposed units per variant. */
    async unitsPerVariant(experimentId: string): Promise<{ a: number; b: number }> {
      const rows = await db
        .select({ variant: policyExposures.variant, units: sql<number>`count(*)::int` })
        .from(policyExposures)
        .where(eq(policyExposures.experiment_id, experimentId))
        .groupBy(policyExposures.variant);
      const units = { a: 0, b: 0 };
      for (const row of rows) units[row.variant] = Number(row.units);
      return units;
    },
  };
}

export type PoliciesRepository = ReturnType<typeof createPoliciesRepository>;
