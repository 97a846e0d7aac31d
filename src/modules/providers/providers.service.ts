import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, type FieldError, invalidFields } from '../../errors.ts';
import { type AddressPolicy, vetHost } from '../../lib/net/address-guard.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { SettingsActivity, SettingsService } from '../settings/settings.service.ts';
import { LOCAL_PROVIDER } from './local-provider.ts';

/** The gateway's contract, for the modules that call models (chat, runs) to import from a service file. */
export type { ModelEvent, ModelGateway, ModelMessage, ModelRequest } from './model-gateway.ts';
export { completeTurn } from './model-gateway.ts';

type Stored = Awaited<ReturnType<typeof getStored>>;
type ProviderConfig = Stored['providers'][number];
type ModelRef = { provider: string; name: string };

/** One provider as a client sends it: the optional fields take their defaults. */
export type ProviderInput = Omit<
  ProviderConfig,
  'credential_id' | 'api_key_header' | 'headers' | 'timeout_ms'
> &
  Partial<Pick<ProviderConfig, 'credential_id' | 'api_key_header' | 'headers' | 'timeout_ms'>>;

/** A partial update: each key given replaces that key; keys left out keep their values. */
export interface ProviderSettingsChanges {
  providers?: ProviderInput[];
  default_model?: ModelRef | null;
  prices?: Stored['prices'];
  fallback?: ModelRef[];
}

/** How long a provider may take to its first output unless its setting says otherwise. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 60_000;

/** Headers the HTTP client sets itself: neither extra headers nor the key's header. */
const CLIENT_HEADERS = new Set(['host', 'content-length', 'cookie', 'proxy-authorization']);

/** Headers that carry keys: they belong in a vault credential, never in clear settings. */
const SECRET_HEADERS = new Set([...CLIENT_HEADERS, 'authorization', 'x-api-key', 'api-key']);

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
    for (const name of Object.keys(provider.headers)) {
      if (SECRET_HEADERS.has(name.toLowerCase()) || name.toLowerCase() === keyHeader) {
        fail(`headers.${name}`, 'carries a key or is set by the client: put the key in a vault credential');
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
    try {
      const credential = await deps.credentials.get(caller, provider.credential_id);
      const fields = Object.keys(credential.data ?? {});
      if (!KEY_FIELDS.some((key) => fields.includes(key))) {
        fail(
          'credential_id',
          `credential ${provider.credential_id} has no ${KEY_FIELDS.join(' or ')} field to send as the key`,
        );
      }
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 404) throw error;
      fail('credential_id', `credential ${provider.credential_id} does not exist in this workspace`);
    }
    return errors;
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
    get: (caller: Pick<Caller, 'workspaceId'>) => getStored(deps.settings, caller.workspaceId),

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
          changes: changesBetween(before, saved),
        });
        return saved;
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
