import type { Caller } from '../../caller.ts';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import { type AppError, conflict, forbidden, invalid, notFound } from '../../errors.ts';
import { accessTopic, type EventHub } from '../../events/event-hub.ts';
import { hashApiKey, looksLikeApiKey, mintApiKey } from '../../lib/api-key.ts';
import { LruCache } from '../../lib/lru-cache.ts';
import { mapItems, type PageRequest } from '../../lib/page.ts';
import type { AuditRecorder, RecordedBy } from '../audit/audit.service.ts';
import {
  type ApiKeyRow,
  createWorkspacesRepository,
  type MemberRow,
  type Role,
  type WorkspacesRepository,
} from './workspaces.repository.ts';

const API_KEY_TOUCH_INTERVAL_MS = 60_000;

/**
 * How long a positive membership or API-key lookup is reused. Every request needs one;
 * caching them briefly saves a database round trip per request. Changes made through
 * this process take effect at once (the entry is dropped); other replicas see them
 * within this window.
 */
export const ACCESS_CACHE_TTL_MS = 5_000;

/** Who an audited change is recorded for. */
type Actor = Pick<Caller, 'userId' | 'workspaceId' | 'role'> & RecordedBy;

/** The credentials a request was admitted with, as a live stream keeps checking them. */
export interface AccessCredentials {
  workspaceId: string;
  userId: string;
  /** The API key that selected the workspace, when one did. */
  apiKeyId?: string;
}

/**
 * Tenancy: workspaces, their members and roles, and API keys. Given the audit trail, every
 * change to them is recorded in it, in the change's transaction. Given the event hub, every
 * change that withdraws or changes access is announced on `access:<workspace id>` after its
 * commit, so live streams check their access again at once (in every process).
 */
export function createWorkspacesService(
  db: Db,
  clock: () => Date = () => new Date(),
  audit?: AuditRecorder,
  hub?: Pick<EventHub, 'publish'>,
) {
  const repo = createWorkspacesRepository(db);
  /** Announces, once `tx` commits, that access to the workspace changed. */
  const announceAccessChange = (tx: Db, workspaceId: string) =>
    afterCommit(tx, () => hub?.publish(accessTopic(workspaceId), Date.now()));
  const memberships = new LruCache<string, { tenantId: string; role: Role }>(50_000, () => clock().getTime());
  const keys = new LruCache<string, ApiKeyRow>(10_000, () => clock().getTime());
  const membershipKey = (workspaceId: string, userId: string) => `${workspaceId}\u0000${userId}`;
  const forget = (workspaceId: string, userId: string) =>
    memberships.delete(membershipKey(workspaceId, userId));

  /** Creates a tenant with one workspace owned by `ownerId`, atomically. */
  function createTenantWithWorkspace(input: { tenantName: string; workspaceName: string; ownerId: string }) {
    return inTransaction(db, async (tx) => {
      const txRepo = createWorkspacesRepository(tx);
      const tenant = await txRepo.insertTenant(input.tenantName);
      const workspace = await txRepo.insertWorkspace(tenant.id, input.workspaceName);
      await txRepo.insertMember(workspace.id, input.ownerId, 'owner');
      await audit?.record(
        tx,
        workspace.id,
        { userId: input.ownerId },
        {
          action: 'workspace.created',
          targetType: 'workspace',
          targetId: workspace.id,
          changes: { name: { old: null, new: workspace.name }, owner: { old: null, new: input.ownerId } },
        },
      );
      return { ...workspace, tenant_name: tenant.name };
    });
  }

  /**
   * Changes a role or removes a member, unless that leaves the workspace without an
   * owner. The owners are locked first so two concurrent demotions cannot both pass.
   */
  function changeMember(
    caller: Actor,
    userId: string,
    change: { role: Role } | { remove: true },
  ): Promise<MemberRow | 'not_found' | 'last_owner' | 'removed'> {
    const { workspaceId } = caller;
    return inTransaction(db, async (tx) => {
      const txRepo = createWorkspacesRepository(tx);
      const owners = await txRepo.lockOwners(workspaceId);
      const current = await txRepo.findMember(workspaceId, userId, true);
      if (!current) return 'not_found';
      const losesOwner = current.role === 'owner' && ('remove' in change || change.role !== 'owner');
      if (losesOwner && owners.length <= 1) return 'last_owner';
      announceAccessChange(tx, workspaceId);
      if ('remove' in change) {
        await txRepo.deleteMember(workspaceId, userId);
        await audit?.record(tx, workspaceId, caller, {
          action: 'member.removed',
          targetType: 'member',
          targetId: userId,
          changes: { role: { old: current.role, new: null } },
        });
        return 'removed';
      }
      const updated = await txRepo.updateMemberRole(workspaceId, userId, change.role);
      if (updated && updated.role !== current.role) {
        await audit?.record(tx, workspaceId, caller, {
          action: 'role.changed',
          targetType: 'member',
          targetId: userId,
          changes: { role: { old: current.role, new: updated.role } },
        });
      }
      return updated ?? 'not_found';
    });
  }

  return {
    /** The tenant a workspace belongs to (server-side folders are provisioned per tenant). */
    async tenantOf(workspaceId: string): Promise<string | undefined> {
      return (await repo.findWorkspace(workspaceId))?.tenant_id;
    },

    async findMembership(workspaceId: string, userId: string) {
      const cacheKey = membershipKey(workspaceId, userId);
      const cached = memberships.get(cacheKey);
      if (cached) return cached;
      const row = await repo.findMembership(workspaceId, userId);
      if (!row) return undefined;
      const membership = { tenantId: row.tenant_id, role: row.role };
      memberships.set(cacheKey, membership, clock().getTime() + ACCESS_CACHE_TTL_MS);
      return membership;
    },

    /**
     * The workspace an API key selects. Unknown, revoked and expired keys all answer
     * undefined, so a caller cannot tell which of them a guessed key was.
     */
    async resolveApiKey(key: string) {
      if (!looksLikeApiKey(key)) return undefined;
      const hash = hashApiKey(key);
      let row = keys.get(hash);
      if (!row) {
        row = await repo.findApiKeyByHash(hash);
        if (row) keys.set(hash, row, clock().getTime() + ACCESS_CACHE_TTL_MS);
      }
      const now = clock();
      if (!row || row.revoked_at || (row.expires_at && row.expires_at <= now)) return undefined;
      if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() > API_KEY_TOUCH_INTERVAL_MS) {
        await repo.touchApiKey(row.id);
        row.last_used_at = now;
      }
      return { workspaceId: row.workspace_id, keyId: row.id };
    },

    /**
     * The role these credentials give now, read from the database past every cache, or
     * undefined when they give none any more (not a member, the workspace gone, the API key
     * revoked or expired). A live stream asks this when it opens and on each access change
     * of its workspace. A membership found gone is also dropped from this process's cache.
     */
    async currentAccess(access: AccessCredentials): Promise<Role | undefined> {
      const row = await repo.findMembership(access.workspaceId, access.userId);
      if (!row) {
        forget(access.workspaceId, access.userId);
        return undefined;
      }
      memberships.set(
        membershipKey(access.workspaceId, access.userId),
        { tenantId: row.tenant_id, role: row.role },
        clock().getTime() + ACCESS_CACHE_TTL_MS,
      );
      if (
        access.apiKeyId !== undefined &&
        !(await repo.isApiKeyActive(access.workspaceId, access.apiKeyId))
      ) {
        return undefined;
      }
      return row.role;
    },

    async getCurrent(caller: Pick<Caller, 'userId' | 'workspaceId' | 'role'>) {
      const workspace = await repo.findWorkspace(caller.workspaceId);
      if (!workspace) throw notFound('workspace', caller.workspaceId);
      return {
        id: workspace.id,
        name: workspace.name,
        created_at: workspace.created_at,
        tenant: { id: workspace.tenant_id, name: workspace.tenant_name },
        role: caller.role,
        user_id: caller.userId,
      };
    },

    async listMine(userId: string) {
      const rows = await repo.listWorkspacesOfUser(userId);
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        created_at: row.created_at,
        tenant: { id: row.tenant_id, name: row.tenant_name },
        role: row.role,
      }));
    },

    /** Creates a new tenant and workspace owned by the caller (self-service sign-up). */
    async createWorkspace(userId: string, input: { name: string; tenant_name?: string }) {
      const created = await createTenantWithWorkspace({
        tenantName: input.tenant_name ?? input.name,
        workspaceName: input.name,
        ownerId: userId,
      });
      return {
        id: created.id,
        name: created.name,
        created_at: created.created_at,
        tenant: { id: created.tenant_id, name: created.tenant_name },
        role: 'owner' as const,
      };
    },

    /**
     * Development bootstrap: the first workspace the user belongs to, created with its
     * own tenant when the user has none. Idempotent, so every start may call it.
     */
    async ensureDefaultWorkspace(userId: string) {
      const [existing] = await repo.listWorkspacesOfUser(userId);
      if (existing) return { id: existing.id, tenant_id: existing.tenant_id };
      const created = await createTenantWithWorkspace({
        tenantName: 'Default tenant',
        workspaceName: 'Default workspace',
        ownerId: userId,
      });
      return { id: created.id, tenant_id: created.tenant_id };
    },

    listMembers: (caller: Pick<Caller, 'userId' | 'workspaceId' | 'role'>, page: PageRequest) =>
      repo.listMembers(caller.workspaceId, page),

    async addMember(caller: Actor, input: { user_id: string; role: Role }) {
      assertMayAssign(caller, input.role);
      const row = await inTransaction(db, async (tx) => {
        const added = await createWorkspacesRepository(tx).insertMember(
          caller.workspaceId,
          input.user_id,
          input.role,
        );
        if (added) {
          await audit?.record(tx, caller.workspaceId, caller, {
            action: 'member.added',
            targetType: 'member',
            targetId: input.user_id,
            changes: { role: { old: null, new: input.role } },
          });
        }
        return added;
      });
      if (!row)
        throw conflict('member_exists', `user ${input.user_id} is already a member of this workspace`);
      return row;
    },

    async changeRole(caller: Actor, userId: string, role: Role) {
      assertMayAssign(caller, role);
      const target = await repo.findMember(caller.workspaceId, userId);
      if (!target) throw notFound('member', userId);
      assertMayAssign(caller, target.role);
      const result = await changeMember(caller, userId, { role });
      forget(caller.workspaceId, userId);
      if (typeof result === 'string') throw memberError(result, userId);
      return result;
    },

    async removeMember(caller: Actor, userId: string) {
      const target = await repo.findMember(caller.workspaceId, userId);
      if (!target) throw notFound('member', userId);
      assertMayAssign(caller, target.role);
      const result = await changeMember(caller, userId, { remove: true });
      forget(caller.workspaceId, userId);
      if (result !== 'removed') throw memberError(result, userId);
    },

    /** Creates a key; the only time the full key is ever returned. */
    async createApiKey(caller: Actor, input: { name: string; expires_at?: string }) {
      const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
      if (expiresAt && expiresAt <= clock()) {
        throw invalid('body.expires_at', 'must be in the future');
      }
      const minted = mintApiKey();
      const row = await inTransaction(db, async (tx) => {
        const created = await createWorkspacesRepository(tx).insertApiKey({
          workspace_id: caller.workspaceId,
          name: input.name,
          prefix: minted.prefix,
          key_hash: minted.hash,
          created_by: caller.userId,
          expires_at: expiresAt,
        });
        // The key's name, visible prefix and expiry; never the key or its hash.
        await audit?.record(tx, caller.workspaceId, caller, {
          action: 'api_key.created',
          targetType: 'api_key',
          targetId: created.id,
          changes: {
            name: { old: null, new: created.name },
            prefix: { old: null, new: created.prefix },
            expires_at: { old: null, new: created.expires_at?.toISOString() ?? null },
          },
        });
        return created;
      });
      return { ...presentApiKey(row), key: minted.key };
    },

    async listApiKeys(caller: Pick<Caller, 'userId' | 'workspaceId' | 'role'>, page: PageRequest) {
      return mapItems(await repo.listApiKeys(caller.workspaceId, page), presentApiKey);
    },

    async revokeApiKey(caller: Actor, id: string) {
      const row = await inTransaction(db, async (tx) => {
        const txRepo = createWorkspacesRepository(tx);
        const before = await txRepo.findApiKey(caller.workspaceId, id);
        const revoked = await txRepo.revokeApiKey(caller.workspaceId, id);
        if (revoked && before && !before.revoked_at) {
          announceAccessChange(tx, caller.workspaceId);
          await audit?.record(tx, caller.workspaceId, caller, {
            action: 'api_key.revoked',
            targetType: 'api_key',
            targetId: revoked.id,
            changes: {
              name: { old: revoked.name, new: revoked.name },
              revoked_at: { old: null, new: revoked.revoked_at?.toISOString() ?? null },
            },
          });
        }
        return revoked;
      });
      if (!row) throw notFound('api key', id);
      keys.delete(row.key_hash);
    },
  };
}

export type WorkspacesService = ReturnType<typeof createWorkspacesService>;

/** Only owners may grant, change or take away the owner role. */
function assertMayAssign(caller: Pick<Caller, 'userId' | 'workspaceId' | 'role'>, role: Role): void {
  if (role === 'owner' && caller.role !== 'owner') {
    throw forbidden('insufficient_role', 'only an owner can grant, change or remove the owner role');
  }
}

function memberError(result: 'not_found' | 'last_owner' | 'removed' | MemberRow, userId: string): AppError {
  if (result === 'last_owner') {
    return conflict(
      'last_owner',
      'a workspace must keep at least one owner; make another member owner first',
    );
  }
  return notFound('member', userId);
}

function presentApiKey(row: Awaited<ReturnType<WorkspacesRepository['insertApiKey']>>) {
  const now = Date.now();
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_by: row.created_by,
    created_at: row.created_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
    last_used_at: row.last_used_at,
    status: row.revoked_at
      ? ('revoked' as const)
      : row.expires_at && row.expires_at.getTime() <= now
        ? ('expired' as const)
        : ('active' as const),
  };
}
