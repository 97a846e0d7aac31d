import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import { conflict, forbidden, invalid, notFound } from '../../errors.ts';
import { accessTopic, type EventHub } from '../../events/event-hub.ts';
import type { ModelRef } from '../../lib/model-ref.ts';
import { mapItems, type PageRequest } from '../../lib/page.ts';
import { isTimeZone } from '../../lib/time-zone.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import type { SettingsActivity } from '../settings/settings.service.ts';
import { createTenantsRepository, type TenantRow, type TenantWrite } from './tenants.repository.ts';

export interface TenantsDependencies {
  db: Db;
  activity: SettingsActivity;
  /**
   * Starts a new workspace of the tenant with the tenant's default model (the providers
   * settings' `default_model`), in the transaction that creates it.
   */
  seedDefaultModel(tx: Db, workspaceId: string, model: ModelRef): Promise<unknown>;
  /** Users listed in `PLATFORM_ADMIN_USERS`: they administer every tenant. */
  platformAdmins: ReadonlySet<string>;
  /** The audit trail of each of the tenant's workspaces: `tenant.created` / `tenant.updated`. */
  audit?: AuditRecorder;
  /** Announces the workspaces a deletion removed (`access:<workspace id>`), so their live streams end. */
  hub?: Pick<EventHub, 'publish'>;
}

/** `POST /settings/tenants`. */
export interface CreateTenantInput {
  name: string;
  time_zone?: string | null;
  default_model?: ModelRef | null;
  /** Also creates the tenant's first workspace, owned by the caller. */
  workspace_name?: string;
}

/** `PUT /settings/tenants/{id}`: the fields given change; null clears a default. */
export interface UpdateTenantInput {
  name?: string;
  time_zone?: string | null;
  default_model?: ModelRef | null;
}

type WorkspaceSummary = { id: string; name: string; created_at: Date };

const present = (row: TenantRow, workspaces: WorkspaceSummary[]) => ({
  id: row.id,
  name: row.name,
  time_zone: row.time_zone,
  default_model: row.default_model ?? null,
  created_by: row.created_by,
  created_at: row.created_at,
  updated_at: row.updated_at,
  workspaces,
});

/**
 * Tenants as their administrators manage them: a tenant's administrators are the current owners
 * of any of its workspaces (its creator only while it has none: `created_by` alone grants
 * nothing once other people's work is in it); platform operators administer all. Someone who does
 * not administer a tenant never sees it: its id is 404 to them, unless they are a member of
 * one of its workspaces (they know it exists), who get 403 `insufficient_role` on a change.
 */
export function createTenantsService(deps: TenantsDependencies) {
  const repo = createTenantsRepository(deps.db);
  const isOperator = (userId: string) => deps.platformAdmins.has(userId);

  function checkDefaults(input: { time_zone?: string | null }): void {
    if (typeof input.time_zone === 'string' && !isTimeZone(input.time_zone)) {
      throw invalid('body.time_zone', 'is not an IANA time zone (such as Europe/Paris)');
    }
  }

  /** The tenant, if `userId` administers it; 404 when they do not know it, 403 when they only belong to it. */
  async function administered(tx: Db, userId: string, id: string) {
    const row = await createTenantsRepository(tx).findForUser(id, userId, true);
    if (!row || (!row.administers && !row.member && !isOperator(userId))) throw notFound('tenant', id);
    if (!row.administers && !isOperator(userId)) {
      throw forbidden(
        'insufficient_role',
        'only an owner of one of the tenant’s workspaces or a platform operator may change it',
      );
    }
    return row;
  }

  /** Records `system.settings_changed` in each of the tenant's workspaces (the change applies to them all). */
  async function recordChange(
    tx: Db,
    userId: string,
    tenant: { id: string; name: string },
    workspaceIds: string[],
    message: string,
    data: Record<string, unknown>,
    action: 'tenant.created' | 'tenant.updated',
  ) {
    for (const workspaceId of workspaceIds) {
      await deps.audit?.record(
        tx,
        workspaceId,
        { userId },
        { action, targetType: 'tenant', targetId: tenant.id, changes: data },
      );
      await deps.activity.record(tx, {
        workspaceId,
        kind: 'system.settings_changed',
        subjectType: 'settings',
        subjectId: `tenants.${tenant.id}`,
        message,
        data: { namespace: 'tenants', tenant_id: tenant.id, ...data },
        actor: userId,
      });
    }
  }

  return {
    /** The tenants the caller administers (all for platform operators), each with its workspaces. */
    async list(userId: string, page: PageRequest) {
      const result = await repo.listAdministered(userId, isOperator(userId), page);
      const workspaces = await repo.workspacesOf(result.items.map((tenant) => tenant.id));
      return mapItems(result, (tenant) =>
        present(
          tenant,
          workspaces
            .filter((workspace) => workspace.tenant_id === tenant.id)
            .map(({ tenant_id: _tenant, ...workspace }) => workspace),
        ),
      );
    },

    /**
     * Creates a tenant the caller administers (any authenticated user may, as with
     * `POST /api/workspaces`), and with `workspace_name` its first workspace, owned by the
     * caller and starting with the tenant's default model.
     */
    async create(userId: string, input: CreateTenantInput) {
      checkDefaults(input);
      return inTransaction(deps.db, async (tx) => {
        const txRepo = createTenantsRepository(tx);
        const tenant = await txRepo.insert({
          name: input.name,
          created_by: userId,
          time_zone: input.time_zone ?? null,
          default_model: input.default_model ?? null,
        });
        const workspaces: WorkspaceSummary[] = [];
        if (input.workspace_name !== undefined) {
          const workspace = await txRepo.insertWorkspace(tenant.id, input.workspace_name, userId);
          if (tenant.default_model) await deps.seedDefaultModel(tx, workspace.id, tenant.default_model);
          workspaces.push({ id: workspace.id, name: workspace.name, created_at: workspace.created_at });
        }
        await recordChange(
          tx,
          userId,
          tenant,
          workspaces.map((workspace) => workspace.id),
          `Tenant “${tenant.name}” created`,
          { name: tenant.name, time_zone: tenant.time_zone, default_model: tenant.default_model },
          'tenant.created',
        );
        return present(tenant, workspaces);
      });
    },

    /** Renames the tenant or changes its defaults (administrators). */
    async update(userId: string, id: string, input: UpdateTenantInput) {
      checkDefaults(input);
      return inTransaction(deps.db, async (tx) => {
        const before = await administered(tx, userId, id);
        const txRepo = createTenantsRepository(tx);
        const changes: TenantWrite = {
          ...(input.name === undefined ? {} : { name: input.name }),
          ...(input.time_zone === undefined ? {} : { time_zone: input.time_zone }),
          ...(input.default_model === undefined ? {} : { default_model: input.default_model }),
        };
        const row = Object.keys(changes).length > 0 ? await txRepo.update(id, changes) : before;
        if (!row) throw notFound('tenant', id);
        const workspaces = (await txRepo.workspacesOf([id])).map(({ tenant_id: _t, ...w }) => w);
        await recordChange(
          tx,
          userId,
          row,
          workspaces.map((workspace) => workspace.id),
          before.name === row.name
            ? `Tenant “${row.name}” settings changed`
            : `Tenant “${before.name}” renamed to “${row.name}”`,
          {
            changed: Object.keys(changes),
            name: row.name,
            time_zone: row.time_zone,
            default_model: row.default_model,
          },
          'tenant.updated',
        );
        return present(row, workspaces);
      });
    },

    /**
     * Deletes the tenant (administrators). A tenant with workspaces is deleted only with
     * `confirm` equal to its name, and its workspaces with everything in them go too;
     * without it, 409 `tenant_not_empty` names them.
     */
    async remove(userId: string, id: string, confirm: string | undefined) {
      return inTransaction(deps.db, async (tx) => {
        const tenant = await administered(tx, userId, id);
        const txRepo = createTenantsRepository(tx);
        const workspaces = await txRepo.workspacesOf([id]);
        if (workspaces.length > 0) {
          if (confirm === undefined) {
            throw conflict(
              'tenant_not_empty',
              `tenant “${tenant.name}” still has ${workspaces.length} workspace(s) (${workspaces
                .map((workspace) => `“${workspace.name}”`)
                .join(', ')}); delete them with it by sending ?confirm=<the tenant's name>`,
            );
          }
          if (confirm !== tenant.name) {
            throw invalid('query.confirm', 'must be the tenant’s name exactly');
          }
        } else if (confirm !== undefined && confirm !== tenant.name) {
          throw invalid('query.confirm', 'must be the tenant’s name exactly');
        }
        await txRepo.delete(id);
        const removed = workspaces.map((workspace) => workspace.id);
        afterCommit(tx, () => {
          for (const workspaceId of removed) deps.hub?.publish(accessTopic(workspaceId), Date.now());
        });
        // In the platform trail: the workspaces' own trails go with them.
        await deps.audit?.record(
          tx,
          null,
          { userId },
          {
            action: 'tenant.deleted',
            targetType: 'tenant',
            targetId: id,
            changes: {
              name: { old: tenant.name, new: null },
              workspaces_removed: { old: removed, new: null },
            },
          },
        );
        return { id, name: tenant.name, workspaces_removed: removed };
      });
    },
  };
}

export type TenantsService = ReturnType<typeof createTenantsService>;
