import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, invalidFields, notFound, preconditionFailed } from '../../errors.ts';
import { createNormaliser, factsTooLarge, MAX_FACTS_BYTES } from '../../lib/conditions.ts';
import { type PageRequest, pageOf } from '../../lib/page.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import type { SettingsActivity } from '../settings/settings.service.ts';
import { BUILT_IN_FLAGS, type BuiltInFlag, isBuiltIn } from './built-in.ts';
import {
  checkDefinition,
  compileFlag,
  type EvaluationContext,
  evaluateFlag,
  type FlagDefinition,
  type FlagType,
  type Resolution,
} from './evaluate.ts';
import { createFlagsRepository, type FlagRow } from './flags.repository.ts';

/**
 * Evaluating every flag of a workspace turns the event loop after this much work: one flag of
 * 50 rules of 2,000 characters over a 16 KiB context takes milliseconds, and a workspace may
 * hold many (60 such flags held the loop for 1.8 s).
 */
const EVALUATION_SLICE_MS = 10;

export interface FlagsDependencies {
  db: Db;
  activity: SettingsActivity;
  /** The workspace audit trail: `flag.created` / `flag.updated` with old and new definitions. */
  audit?: AuditRecorder;
}

/** A flag as the API shows it: its definition, whether it is built in, its version and ETag. */
export interface FlagView extends FlagDefinition {
  key: string;
  description: string;
  built_in: boolean;
  version: number | null;
  etag: string | null;
  updated_at: string | null;
  updated_by: string | null;
}

/** `PUT /settings/flags/{key}`: the whole definition; fields left out take their defaults. */
export interface PutFlagInput {
  type: FlagType;
  default: unknown;
  description?: string;
  enabled?: boolean;
  variants?: Record<string, unknown>;
  rules?: FlagDefinition['rules'];
  rollout?: FlagDefinition['rollout'];
  salt?: string | null;
}

/** The strong ETag of a stored version. */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * Whether an `If-Match` header admits the current version (RFC 9110 13.1.1): `*` admits any
 * stored flag; otherwise one of the listed strong tags must equal the current one (a weak
 * `W/` tag never does). Nothing stored matches nothing.
 */
export function ifMatchAdmits(header: string, version: number | undefined): boolean {
  if (version === undefined) return false;
  if (header.trim() === '*') return true;
  const current = etagOf(version);
  return header.split(',').some((tag) => tag.trim() === current);
}

const fromRow = (row: FlagRow): FlagView => ({
  key: row.key,
  type: row.type,
  description: row.description,
  enabled: row.enabled,
  default: row.default_value,
  variants: row.variants,
  rules: row.rules,
  rollout: row.rollout ?? null,
  salt: row.salt,
  built_in: isBuiltIn(row.key),
  version: row.version,
  etag: etagOf(row.version),
  updated_at: row.updated_at.toISOString(),
  updated_by: row.updated_by,
});

/** What the audit trail compares between two versions of a flag. */
const auditedFlag = (row: FlagRow) => ({
  type: row.type,
  description: row.description,
  enabled: row.enabled,
  default: row.default_value,
  variants: row.variants,
  rules: row.rules,
  rollout: row.rollout,
  salt: row.salt,
  version: row.version,
});

/** A built-in flag the workspace has not stored: its platform default, no version. */
const builtInView = (key: BuiltInFlag): FlagView => {
  const flag = BUILT_IN_FLAGS[key];
  return {
    key,
    type: flag.type,
    description: flag.description,
    enabled: true,
    default: flag.default,
    variants: {},
    rules: [],
    rollout: null,
    salt: null,
    built_in: true,
    version: null,
    etag: null,
    updated_at: null,
    updated_by: null,
  };
};

/**
 * Feature flags, per workspace: definitions (admins write them, with optimistic concurrency
 * by version), their evaluation for a context (OpenFeature's resolution shape), and the one
 * door through which the platform's own code reads a flag (`enabled`).
 */
export function createFlagsService(deps: FlagsDependencies) {
  const repo = createFlagsRepository(deps.db);

  /** The stored flag, else the built-in default, else undefined. */
  async function find(workspaceId: string, key: string): Promise<FlagView | undefined> {
    const row = await repo.get(workspaceId, key);
    if (row) return fromRow(row);
    return isBuiltIn(key) ? builtInView(key) : undefined;
  }

  /** The workspace's stored flags and the built-in ones it did not store, by key. */
  async function allFlags(workspaceId: string): Promise<FlagView[]> {
    const stored = (await repo.list(workspaceId)).map(fromRow);
    const storedKeys = new Set(stored.map((flag) => flag.key));
    const builtIns = (Object.keys(BUILT_IN_FLAGS) as BuiltInFlag[])
      .filter((key) => !storedKeys.has(key))
      .map(builtInView);
    return [...stored, ...builtIns].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * What rules read: the context, the caller's user and workspace, the unit splits bucket. A
   * context larger than conditions test (`MAX_FACTS_BYTES`) is refused with 413 naming
   * `body.context`: every rule of every flag may scan it.
   */
  const factsFor = (
    caller: Pick<Caller, 'workspaceId' | 'userId'>,
    context: EvaluationContext,
  ): EvaluationContext => {
    const tooLarge = factsTooLarge(context);
    if (tooLarge) {
      throw new AppError(413, 'payload_too_large', `the evaluation context ${tooLarge}`, [
        { field: 'body.context', message: `must be at most ${MAX_FACTS_BYTES} bytes as JSON` },
      ]);
    }
    return {
      user_id: caller.userId,
      ...context,
      workspace_id: caller.workspaceId,
      targeting_key: context.targeting_key ?? caller.userId,
    };
  };

  async function resolve(
    caller: Pick<Caller, 'workspaceId' | 'userId'>,
    key: string,
    context: EvaluationContext = {},
  ): Promise<Resolution & { key: string }> {
    const facts = factsFor(caller, context);
    const flag = await find(caller.workspaceId, key);
    if (!flag) throw notFound('flag', key);
    return { key, ...evaluateFlag(compileFlag(key, flag), facts) };
  }

  return {
    /** The workspace's flags, by key: those it stored and the built-in ones it did not. */
    async list(caller: Pick<Caller, 'workspaceId'>, page: PageRequest) {
      return pageOf(await allFlags(caller.workspaceId), page);
    },

    /** One flag; 404 `flag_not_found` for a key the workspace never stored and that is not built in. */
    async get(caller: Pick<Caller, 'workspaceId'>, key: string): Promise<FlagView> {
      const flag = await find(caller.workspaceId, key);
      if (!flag) throw notFound('flag', key);
      return flag;
    },

    /**
     * Creates or replaces a flag (admins; the route checks the role). Every invalid field is
     * named at once (values of the wrong type, rules that do not parse). Given `ifMatch`, the
     * write happens only if the stored version still matches it (412 otherwise), checked
     * under the row's lock. Records `system.settings_changed` in the same transaction.
     */
    async put(
      caller: Pick<Caller, 'workspaceId' | 'userId'> & RecordedBy,
      key: string,
      input: PutFlagInput,
      ifMatch?: string,
    ): Promise<FlagView> {
      const definition: FlagDefinition = {
        type: input.type,
        default: input.default,
        variants: input.variants ?? {},
        rules: input.rules ?? [],
        rollout: input.rollout ?? null,
        enabled: input.enabled ?? true,
        salt: input.salt ?? null,
      };
      const problems = checkDefinition(definition);
      if (isBuiltIn(key) && input.type !== BUILT_IN_FLAGS[key].type) {
        problems.unshift({
          field: 'body.type',
          message: `must be ${BUILT_IN_FLAGS[key].type}: ${key} is a built-in flag the platform reads`,
        });
      }
      if (problems.length > 0) throw invalidFields(problems);

      return inTransaction(deps.db, async (tx) => {
        const txRepo = createFlagsRepository(tx);
        const current = await txRepo.get(caller.workspaceId, key, true);
        if (ifMatch !== undefined && !ifMatchAdmits(ifMatch, current?.version)) {
          throw preconditionFailed(
            current
              ? `flag ${key} is at version ${etagOf(current.version)}; read it again and retry`
              : `flag ${key} is not stored, so If-Match cannot match`,
          );
        }
        const row = await txRepo.put(caller.workspaceId, key, {
          type: definition.type,
          enabled: definition.enabled,
          default_value: definition.default,
          variants: definition.variants,
          rules: definition.rules,
          rollout: definition.rollout,
          salt: definition.salt,
          description: input.description ?? (isBuiltIn(key) ? BUILT_IN_FLAGS[key].description : ''),
          updated_by: caller.userId,
        });
        await deps.activity.record(tx, {
          workspaceId: caller.workspaceId,
          kind: 'system.settings_changed',
          subjectType: 'settings',
          subjectId: `flags.${key}`,
          message: `Feature flag “${key}” ${current ? 'changed' : 'created'}`,
          data: { namespace: 'flags', key, type: row.type, enabled: row.enabled, version: row.version },
          actor: caller.userId,
        });
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: current ? 'flag.updated' : 'flag.created',
          targetType: 'flag',
          targetId: key,
          changes: changesBetween(current && auditedFlag(current), auditedFlag(row)),
        });
        return fromRow(row);
      });
    },

    /**
     * Resolves a flag for a context (`targeting_key` defaults to the caller's user id;
     * `user_id` and `workspace_id` are the caller's unless the context sets `user_id`).
     */
    evaluate: resolve,

    /** Every flag of the workspace resolved for one context (the list's flags, by key). */
    async evaluateAll(caller: Pick<Caller, 'workspaceId' | 'userId'>, context: EvaluationContext = {}) {
      const facts = factsFor(caller, context);
      const all = await allFlags(caller.workspaceId);
      const lower = createNormaliser();
      const items: (Resolution & { key: string })[] = [];
      let sliceStart = performance.now();
      for (const flag of all) {
        // A workspace may hold many flags of heavy rules: the event loop turns between slices.
        if (performance.now() - sliceStart > EVALUATION_SLICE_MS) {
          await nextTurn();
          sliceStart = performance.now();
        }
        items.push({ key: flag.key, ...evaluateFlag(compileFlag(flag.key, flag), facts, lower) });
      }
      return { items };
    },

    /**
     * The one way the platform's own code reads a built-in boolean flag: its value for the
     * caller (false unless the flag resolves to true).
     */
    async enabled(
      caller: Pick<Caller, 'workspaceId' | 'userId'>,
      key: {
        [K in BuiltInFlag]: (typeof BUILT_IN_FLAGS)[K]['type'] extends 'boolean' ? K : never;
      }[BuiltInFlag],
    ): Promise<boolean> {
      return (await resolve(caller, key)).value === true;
    },
  };
}

export type FlagsService = ReturnType<typeof createFlagsService>;
