import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, type FieldError, invalidFields } from '../../errors.ts';
import type { ModelRef } from '../../lib/model-ref.ts';
import { type AddressPolicy, vetHost } from '../../lib/net/address-guard.ts';
import { destinationOf, normalizeHostEntry } from '../../lib/net/allowed-hosts.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { SettingsActivity, SettingsService } from '../settings/settings.service.ts';
import { LOCAL_PROVIDER } from './local-provider.ts';

/** The gateway's contract, for the modules that call models (chat, runs) to import from a service file. */
export type {
  LocalKnowledge,
  ModelEvent,
  ModelGateway,
  ModelMessage,
  ModelRequest,
  ModelTool,
  ModelTurns,
  ToolBinder,
} from './model-gateway.ts';
export { completeTurn, createModelTurns } from './model-gateway.ts';

type Stored = Awaited<ReturnType<typeof getStored>>;
type ProviderConfig = Stored['providers'][number];

/** One provider as a client sends it: the optional fields take their defaults. */
export type ProviderInput = Omit<
  ProviderConfig,
  'credential_id' | 'api_key_header' | 'headers' | 'timeout_ms'
> &
  Partial<
    Pick<ProviderConfig, 'credential_id' | 'api_key_header' | 'headers' | 'timeout_ms' | 'secret_headers'>
  >;

/** A partial update: each key given replaces that key; keys left out keep their values. */
export interface ProviderSettingsChanges {
  providers?: ProviderInput[];
  default_model?: ModelRef | null;
  prices?: Stored['prices'];
  fallback?: ModelRef[];
  /**
   * The destinations (`host[:port]`) the admin confirms a stored key may now go to: required
   * for every provider whose base URL moves to another host while it sends vault credentials.
   */
  confirm_hosts?: string[];
}

/** How long a provider may take to its first output unless its setting says otherwise. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 60_000;

/** Headers the HTTP client sets itself: neither extra headers nor the key's header. */
const CLIENT_HEADERS = new Set(['host', 'content-length', 'cookie', 'proxy-authorization']);

/**
 * Header names that carry secrets (`Authorization`, `X-API-Key`, `api-key`, `X-Auth-Token`,
 * `Ocp-Apim-Subscription-Key`, `X-Client-Secret`, ...): their values belong in the vault
 * (`secret_headers`), never in clear settings that viewers read and the audit trail records.
 */
const SECRET_HEADER_NAME = /key|token|secret|auth|passw|cookie|session|signature|credential/i;

/** True when a header's name says its value is a secret. */
export const isSecretHeader = (name: string): boolean => SECRET_HEADER_NAME.test(name);

/**
 * The settings with the value of every secret-named clear header replaced by `********`: a
 * header stored before such names were refused is never answered nor audited in clear.
 */
export function maskSecretHeaders<T extends { providers: ProviderConfig[] }>(settings: T): T {
  return {
    ...settings,
    providers: settings.providers.map((provider) => ({
      ...provider,
      headers: Object.fromEntries(
        Object.entries(provider.headers).map(([name, value]) => [
          name,
          isSecretHeader(name) ? '********' : value,
        ]),
      ),
    })),
  };
}

/** The vault credentials a provider sends: its key and its secret headers' values. */
const credentialsOf = (provider: ProviderConfig): number[] => [
  ...(provider.credential_id === null ? [] : [provider.credential_id]),
  ...Object.values(provider.secret_headers ?? {}),
];

/** Credential fields that hold a provider's key, in the order they are looked for. */
export const KEY_FIELDS = ['api_key', 'token'] as const;

export interface ProvidersDependencies {
  db: Db;
  settings: Pick<SettingsService, 'get' | 'update'>;
  /** Checks that a referenced credential exists and holds a key (no decryption of secrets). */
  credentials: Pick<CredentialsService, 'get'>;
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  /**
   * Records `system.settings_changed` in the update's transaction. The composition root wires
   * the activity module's `record` here; until that module is wired, nothing is recorded.
   */
  activity?: SettingsActivity;
  /** The workspace audit trail: `providers.updated` with the old and new values (credential ids, never keys). */
  audit?: AuditRecorder;
}

/** Reads the stored settings (a helper whose type names the stored shape). */
function getStored(settings: Pick<SettingsService, 'get'>, workspaceId: string) {
  return settings.get(workspaceId, 'providers');
}

/**
 * A workspace's model providers: endpoints with vault-referenced keys, the default model,
 * prices and the fallback order. Validation is here, in one place: every base URL passes the
 * outbound address guard, every credential exists in the workspace, every model reference
 * names a configured provider (or `local`).
 */
export function createProvidersService(deps: ProvidersDependencies) {
  async function checkProvider(
    caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
    provider: ProviderConfig,
    field: string,
    policy: AddressPolicy,
  ): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    const fail = (name: string, message: string) => errors.push({ field: `${field}.${name}`, message });
    if (provider.id === LOCAL_PROVIDER.provider) fail('id', 'is reserved for the built-in local provider');
    errors.push(...(await checkBaseUrl(provider.base_url, `${field}.base_url`, policy)));
    const keyHeader = provider.api_key_header?.toLowerCase();
    const secretHeaders = Object.keys(provider.secret_headers ?? {}).map((name) => name.toLowerCase());
    for (const name of Object.keys(provider.headers)) {
      const lower = name.toLowerCase();
      if (CLIENT_HEADERS.has(lower)) fail(`headers.${name}`, 'is a header the HTTP client sets itself');
      else if (isSecretHeader(name) || lower === keyHeader || secretHeaders.includes(lower)) {
        fail(
          `headers.${name}`,
          'carries a secret: store it in a vault credential and name that credential in secret_headers',
        );
      }
    }
    for (const [name, id] of Object.entries(provider.secret_headers ?? {})) {
      const lower = name.toLowerCase();
      if (CLIENT_HEADERS.has(lower) || lower === keyHeader) {
        fail(`secret_headers.${name}`, 'is a header the HTTP client or the key sets itself');
      } else if (secretHeaders.indexOf(lower) !== secretHeaders.lastIndexOf(lower)) {
        fail(`secret_headers.${name}`, 'repeats a header name');
      } else {
        errors.push(...(await checkKeyCredential(caller, id, `${field}.secret_headers.${name}`)));
      }
    }
    if (keyHeader !== undefined) {
      if (provider.kind !== 'openai_compatible')
        fail('api_key_header', 'applies to openai_compatible providers only');
      else if (provider.credential_id === null)
        fail('api_key_header', 'needs credential_id (the key it carries)');
      else if (CLIENT_HEADERS.has(keyHeader))
        fail('api_key_header', 'is a header the HTTP client sets itself');
    }
    if (provider.credential_id === null) {
      if (provider.kind === 'anthropic') fail('credential_id', 'is required: the Anthropic API needs a key');
      return errors;
    }
    errors.push(...(await checkKeyCredential(caller, provider.credential_id, `${field}.credential_id`)));
    return errors;
  }

  /** A credential of the workspace with a key field (checked without decrypting a secret). */
  async function checkKeyCredential(
    caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
    id: number,
    field: string,
  ): Promise<FieldError[]> {
    try {
      const credential = await deps.credentials.get(caller, id);
      const fields = Object.keys(credential.data ?? {});
      if (KEY_FIELDS.some((key) => fields.includes(key))) return [];
      return [
        { field, message: `credential ${id} has no ${KEY_FIELDS.join(' or ')} field to send as the key` },
      ];
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 404) throw error;
      return [{ field, message: `credential ${id} does not exist in this workspace` }];
    }
  }

  /**
   * Rule C3b for providers: a provider that sends vault credentials and whose base URL moves
   * to another destination needs that destination in `confirm_hosts`, so an admin re-confirms
   * where the stored keys will go, as the vault does when a test endpoint moves.
   */
  function unconfirmedMoves(
    current: ProviderConfig[],
    next: ProviderConfig[],
    confirmed: string[] | undefined,
  ): FieldError[] {
    const hosts = new Set((confirmed ?? []).map((host) => normalizeHostEntry(host) ?? host));
    const before = new Map(current.map((provider) => [provider.id, provider]));
    return next.flatMap((provider, index) => {
      const old = before.get(provider.id);
      const ids = credentialsOf(provider);
      if (!old || ids.length === 0) return [];
      const [from, to] = [destinationOf(new URL(old.base_url)), destinationOf(new URL(provider.base_url))];
      if (from === to || hosts.has(to)) return [];
      return [
        {
          field: `body.providers.${index}.base_url`,
          message: `moves where credential ${ids.join(', ')} is sent from ${from} to ${to}: add "${to}" to confirm_hosts to confirm`,
        },
      ];
    });
  }

  /** Model references must name a configured provider, or `local`. */
  function checkRefs(
    refs: { ref: ModelRef; field: string }[],
    configured: Set<string>,
    given: boolean,
  ): FieldError[] {
    return refs.flatMap(({ ref, field }) =>
      configured.has(ref.provider) || ref.provider === LOCAL_PROVIDER.provider
        ? []
        : [
            given
              ? { field, message: `names provider "${ref.provider}", which is not configured` }
              : {
                  field: 'body.providers',
                  message: `leaves ${field.replace(/^body\./, '')} naming provider "${ref.provider}", which would no longer be configured`,
                },
          ],
    );
  }

  return {
    /** The workspace's provider settings; keys are vault references, so nothing here is secret. */
    get: async (caller: Pick<Caller, 'workspaceId'>) =>
      maskSecretHeaders(await getStored(deps.settings, caller.workspaceId)),

    /**
     * Replaces the keys given (admins; the route checks the role), validated together with the
     * keys kept, and records `system.settings_changed` in the same transaction.
     */
    async update(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'> & RecordedBy,
      changes: ProviderSettingsChanges,
    ) {
      const current = await getStored(deps.settings, caller.workspaceId);
      const normalized: Partial<Stored> = {
        ...(changes.providers
          ? {
              providers: changes.providers.map((provider) => ({
                ...provider,
                credential_id: provider.credential_id ?? null,
                api_key_header: provider.api_key_header ?? null,
                headers: provider.headers ?? {},
                timeout_ms: provider.timeout_ms ?? DEFAULT_PROVIDER_TIMEOUT_MS,
              })),
            }
          : {}),
        ...(changes.default_model !== undefined ? { default_model: changes.default_model } : {}),
        ...(changes.prices ? { prices: changes.prices } : {}),
        ...(changes.fallback ? { fallback: changes.fallback } : {}),
      };
      const merged: Stored = { ...current, ...normalized };
      const errors: FieldError[] = [];

      if (normalized.providers) {
        const policy = await deps.addressPolicy(caller.workspaceId);
        const seen = new Set<string>();
        for (const [index, provider] of normalized.providers.entries()) {
          if (seen.has(provider.id))
            errors.push({ field: `body.providers.${index}.id`, message: `repeats "${provider.id}"` });
          seen.add(provider.id);
          errors.push(...(await checkProvider(caller, provider, `body.providers.${index}`, policy)));
        }
      }
      const configured = new Set(merged.providers.map((provider) => provider.id));
      if (merged.default_model) {
        errors.push(
          ...checkRefs(
            [{ ref: merged.default_model, field: 'body.default_model.provider' }],
            configured,
            changes.default_model !== undefined,
          ),
        );
      } else if (merged.providers.length > 0) {
        errors.push({ field: 'body.default_model', message: 'is required once a provider is configured' });
      }
      errors.push(
        ...checkRefs(
          merged.fallback.map((ref, index) => ({ ref, field: `body.fallback.${index}.provider` })),
          configured,
          changes.fallback !== undefined,
        ),
      );
      if (changes.fallback) {
        const keys = changes.fallback.map((ref) => `${ref.provider}/${ref.name}`);
        keys.forEach((key, index) => {
          if (keys.indexOf(key) !== index)
            errors.push({ field: `body.fallback.${index}`, message: `repeats ${key}` });
        });
      }
      if (changes.prices) {
        const keys = changes.prices.map((price) => `${price.provider}/${price.name}`);
        keys.forEach((key, index) => {
          if (keys.indexOf(key) !== index)
            errors.push({ field: `body.prices.${index}`, message: `repeats ${key}` });
        });
      }
      if (errors.length > 0) throw invalidFields(errors);
      if (normalized.providers) {
        const moves = unconfirmedMoves(current.providers, normalized.providers, changes.confirm_hosts);
        if (moves.length > 0) {
          throw new AppError(
            409,
            'confirmation_required',
            `a stored key would be sent to a new host: ${moves.map((move) => move.message).join('; ')}`,
            moves,
          );
        }
      }

      return inTransaction(deps.db, async (tx) => {
        const before = await deps.settings.get(caller.workspaceId, 'providers', tx);
        const saved = await deps.settings.update(caller.workspaceId, 'providers', normalized, tx);
        await deps.activity?.record(tx, {
          workspaceId: caller.workspaceId,
          kind: 'system.settings_changed',
          subjectType: 'settings',
          subjectId: 'providers',
          message: `LLM provider settings changed (${Object.keys(normalized).join(', ')})`,
          data: {
            namespace: 'providers',
            changed: Object.keys(normalized),
            providers: saved.providers.map((p) => p.id),
          },
          actor: caller.userId,
        });
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: 'providers.updated',
          targetType: 'settings',
          targetId: 'providers',
          changes: changesBetween(maskSecretHeaders(before), maskSecretHeaders(saved)),
        });
        return maskSecretHeaders(saved);
      });
    },
  };
}

export type ProvidersService = ReturnType<typeof createProvidersService>;

/**
 * A base URL a provider may be called at: http or https, no credentials, query or fragment
 * (the SDK appends paths), and a host the workspace's address policy allows.
 */
export async function checkBaseUrl(
  text: string,
  field: string,
  policy: AddressPolicy,
): Promise<FieldError[]> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [{ field, message: 'is not an absolute URL' }];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return [{ field, message: `must use http or https, not ${url.protocol.slice(0, -1)}` }];
  }
  if (url.username || url.password)
    return [{ field, message: 'must not carry credentials: use credential_id' }];
  if (url.search || url.hash) return [{ field, message: 'must not have a query or fragment' }];
  const vetted = await vetHost(url.hostname, policy);
  return vetted.ok ? [] : [{ field, message: vetted.message }];
}
