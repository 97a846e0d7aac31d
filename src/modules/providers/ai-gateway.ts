import { createHash } from 'node:crypto';
import type { LanguageModel, ToolSet } from 'ai';
import type { AppliedPrice, ModelPrice } from '../../db/schema/settings.ts';
import { AppError, type FieldError, infrastructureFailure } from '../../errors.ts';
import { LruCache } from '../../lib/lru-cache.ts';
import type { ModelRef } from '../../lib/model-ref.ts';
import type { AddressPolicy } from '../../lib/net/address-guard.ts';
import { AddressRefusedError, createGuardedFetch } from '../../lib/net/guarded-fetch.ts';
import type { ComponentHealth } from '../../lifecycle.ts';
import type { AccessPurpose, CredentialsService } from '../credentials/credentials.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import { estimateTokens, LOCAL_PROVIDER, streamLocalTurn } from './local-provider.ts';
import type { EmbedRequest, ModelCall, ModelEvent, ModelGateway } from './model-gateway.ts';
import { KEY_FIELDS } from './providers.service.ts';

// The SDK prints its warnings (an unknown model's token limit, ...) to the console; the
// platform's logs are structured JSON, so they are turned off.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

/** The AI SDK and the two provider packages the gateway builds models with. */
type Sdk = typeof import('ai') &
  Pick<typeof import('@ai-sdk/anthropic'), 'createAnthropic'> &
  Pick<typeof import('@ai-sdk/openai-compatible'), 'createOpenAICompatible'>;

/** The SDK once loaded; until then no error can be one of its own. */
let loadedSdk: Sdk | undefined;
let loadingSdk: Promise<Sdk> | undefined;

/**
 * Loads the AI SDK with its providers on the first call to a configured provider: about 200 ms
 * of CPU and 25 MB that a start-up, and a service whose workspaces configured no provider (the
 * built-in `local` provider answers), never pay (bench/RESULTS.md, "Start-up").
 */
function loadSdk(): Promise<Sdk> {
  loadingSdk ??= Promise.all([
    import('ai'),
    import('@ai-sdk/anthropic'),
    import('@ai-sdk/openai-compatible'),
  ]).then(([ai, { createAnthropic }, { createOpenAICompatible }]) => {
    loadedSdk = { ...ai, createAnthropic, createOpenAICompatible };
    return loadedSdk;
  });
  return loadingSdk;
}

/** Model steps of one turn: each tool round trip is a step, so this bounds tool loops. */
export const MAX_STEPS = 8;
/** Health probes: per-probe timeout, how long a result is reused, and how many endpoints are probed. */
export const PROBE_TIMEOUT_MS = 2_000;
export const HEALTH_CACHE_MS = 60_000;
export const MAX_PROBES = 10;

const COMPONENT = 'LLM Providers';
/** AI SDK models kept built (workspace, provider settings, model name, key). */
const MODEL_CACHE_SIZE = 500;

type Settings = Awaited<ReturnType<typeof settingsOf>>;
type ProviderConfig = Settings['providers'][number];

/** What a provider call sends from the vault: its key and its secret headers' values. */
interface ProviderSecrets {
  key: string | undefined;
  headers: Record<string, string>;
}
type Fallback = Extract<ModelEvent, { type: 'finish' }>['fallbacks'][number];

export interface ModelGatewayDependencies {
  settings: Pick<SettingsService, 'get' | 'valuesAcrossWorkspaces'>;
  /** Decrypts provider keys (audited as service `llm`). */
  credentials: Pick<CredentialsService, 'access'>;
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  /** The clock of the health cache (tests move it). */
  now?: () => number;
}

function settingsOf(settings: Pick<SettingsService, 'get'>, workspaceId: string) {
  return settings.get(workspaceId, 'providers');
}

/** Why one attempt failed, and whether the turn may still move on to the next model. */
class AttemptFailure extends Error {
  readonly timeout: boolean;
  /** Output already reached the caller: the failure is final, no fallback. */
  readonly afterOutput: boolean;

  constructor(message: string, options: { timeout: boolean; afterOutput: boolean }) {
    super(message);
    this.timeout = options.timeout;
    this.afterOutput = options.afterOutput;
  }
}

/** What one probe of the providers' endpoints found. */
interface ProviderProbe {
  /** Across every workspace: for platform operators. */
  platform: ComponentHealth;
  /** Each configured workspace's own endpoints. */
  workspaces: Map<string, ComponentHealth>;
  /** The settings could not be read (the database's outage): no workspace's state is known. */
  unread?: boolean;
}

/** Up with the slowest reachable endpoint's latency when any answered, else down. */
function rowOf(reachable: { latency: number }[], detail: string): ComponentHealth {
  return reachable.length === 0
    ? { name: COMPONENT, status: 'down', detail }
    : {
        name: COMPONENT,
        status: 'up',
        latency_ms: Math.round(Math.max(...reachable.map((result) => result.latency)) * 10) / 10,
        detail,
      };
}

/**
 * The model gateway over the Vercel AI SDK (`streamText` with tools). It resolves the model
 * (the request's, else the workspace's default, else the built-in `local` provider when the
 * workspace configured none), and on a provider error, a 429 or a timeout before the first
 * output moves on along the workspace's fallback list. Keys come from the vault per call;
 * every request goes through the outbound address guard; usage comes from the provider and
 * cost from the workspace's prices.
 */
export function createModelGateway(deps: ModelGatewayDependencies): ModelGateway {
  const now = deps.now ?? (() => performance.now());
  const inFlight = new Set<AbortController>();
  /** The last probe that could read the settings, and when it started. */
  let known: { at: number; probe: ProviderProbe } | undefined;
  /** The probe under way, if any: one at a time. */
  let probing: Promise<ProviderProbe> | undefined;
  /** Each endpoint's last probe, kept across probes: each probe reaches at most `MAX_PROBES`. */
  const lastSeen = new Map<string, { reachable: boolean; latency: number }>();
  /** Where the next probe starts in the list of endpoints, so every endpoint's turn comes. */
  let probeOffset = 0;
  const models = new LruCache<string, ReturnType<typeof buildLanguageModel>>(MODEL_CACHE_SIZE);

  /**
   * What a call to the provider sends from the vault, read per attempt: the key (undefined for
   * keyless servers) and the values of its `secret_headers`. Every read is an audited access
   * naming the base URL's host and the agent, run or conversation.
   */
  async function secretsOf(
    request: { workspaceId: string; userId?: string; usedBy?: AccessPurpose },
    provider: ProviderConfig,
  ): Promise<ProviderSecrets> {
    const headers: Record<string, string> = {};
    for (const [name, id] of Object.entries(provider.secret_headers ?? {})) {
      headers[name] = await keyOf(request, provider, id);
    }
    return {
      key:
        provider.credential_id === null ? undefined : await keyOf(request, provider, provider.credential_id),
      headers,
    };
  }

  /** A key from the vault: the credential's `api_key`, else its `token`. */
  async function keyOf(
    request: { workspaceId: string; userId?: string; usedBy?: AccessPurpose },
    provider: ProviderConfig,
    credentialId: number,
  ): Promise<string> {
    for (const field of KEY_FIELDS) {
      try {
        const data = await deps.credentials.access({
          workspaceId: request.workspaceId,
          id: credentialId,
          fields: [field],
          serviceName: 'llm',
          userId: request.userId,
          // The admin who set the base URL approved it (docs/providers.md): recorded, not checked.
          destination: { url: new URL(provider.base_url), allowedOnly: false },
          ...(request.usedBy ? { usedBy: request.usedBy } : {}),
        });
        const value = data[field];
        if (typeof value === 'string' && value !== '') return value;
      } catch (error) {
        // The vault's database away or busy is the platform's failure, not the provider's.
        throwIfInfrastructure(error);
        // A field the credential's type lacks is refused before any audit record: try the next.
        if (error instanceof AppError && error.code === 'validation_failed') continue;
        if (error instanceof AppError) {
          throw new AttemptFailure(`credential ${credentialId}: ${error.message}`, {
            timeout: false,
            afterOutput: false,
          });
        }
        throw error;
      }
    }
    throw new AttemptFailure(`credential ${credentialId} holds no ${KEY_FIELDS.join(' or ')}`, {
      timeout: false,
      afterOutput: false,
    });
  }

  /**
   * The AI SDK model for a provider's model name, built once per workspace, provider settings
   * and key (building one costs about a millisecond of CPU per call) and kept while they stay
   * the same: a changed base URL, header or key makes a new one. The key is part of the cache
   * key only through a digest.
   */
  function languageModel(
    sdk: Sdk,
    provider: ProviderConfig,
    name: string,
    secrets: ProviderSecrets,
    workspaceId: string,
  ) {
    const cacheKey = `${workspaceId}\n${name}\n${JSON.stringify(provider)}\n${createHash('sha256')
      .update(JSON.stringify(secrets))
      .digest('base64url')}`;
    const cached = models.get(cacheKey);
    if (cached) return cached;
    const model = buildLanguageModel(sdk, provider, name, secrets, workspaceId);
    models.set(cacheKey, model, Number.POSITIVE_INFINITY);
    return model;
  }

  function buildLanguageModel(
    { createAnthropic, createOpenAICompatible }: Sdk,
    provider: ProviderConfig,
    name: string,
    { key, headers }: ProviderSecrets,
    workspaceId: string,
  ) {
    const fetch = createGuardedFetch(() => deps.addressPolicy(workspaceId));
    if (provider.kind === 'anthropic') {
      return createAnthropic({
        baseURL: provider.base_url,
        apiKey: key,
        headers: { ...provider.headers, ...headers },
        fetch,
      }).messages(name);
    }
    const keyHeaders = key !== undefined && provider.api_key_header ? { [provider.api_key_header]: key } : {};
    return createOpenAICompatible({
      name: provider.id,
      baseURL: provider.base_url,
      ...(key !== undefined && !provider.api_key_header ? { apiKey: key } : {}),
      headers: { ...provider.headers, ...headers, ...keyHeaders },
      fetch,
      includeUsage: true,
    }).chatModel(name);
  }

  /** One model's attempt at the turn; throws `AttemptFailure` (or the caller's abort reason). */
  async function* attempt(
    request: ModelCall,
    settings: Settings,
    ref: ModelRef,
    provider: ProviderConfig,
    tools: ToolSet | undefined,
  ): AsyncGenerator<ModelEvent> {
    const started = now();
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal.reason);
    request.signal.addEventListener('abort', onAbort, { once: true });
    inFlight.add(controller);
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let pendingTools = 0;
    let output = false;
    let secrets: ProviderSecrets | undefined;
    // The provider must show progress within timeout_ms: before its first output, and between
    // outputs after it. The clock stops while a tool runs (tools have their own timeouts).
    const arm = () => {
      clearTimeout(timer);
      if (pendingTools > 0) return;
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new Error('provider timeout'));
      }, provider.timeout_ms);
    };
    const failure = (message: string, timeout = false) =>
      new AttemptFailure(scrub(message, secrets), { timeout, afterOutput: output });
    try {
      arm();
      secrets = await secretsOf(request, provider);
      let text = '';
      let usage: { inputTokens?: number; outputTokens?: number } | undefined;
      const sdk = await loadSdk();
      const { streamText, stepCountIs } = sdk;
      const result = streamText({
        model: languageModel(sdk, provider, ref.name, secrets, request.workspaceId) as LanguageModel,
        ...(request.system ? { instructions: request.system } : {}),
        messages: request.messages.map((message) => ({ role: message.role, content: message.content })),
        ...(tools ? { tools, stopWhen: stepCountIs(MAX_STEPS) } : {}),
        maxRetries: 0,
        abortSignal: controller.signal,
        // Errors arrive as `error` parts below; the SDK would otherwise print them to the console.
        onError: () => {},
      });
      for await (const part of result.fullStream) {
        arm();
        switch (part.type) {
          case 'text-delta':
            output = true;
            text += part.text;
            yield { type: 'delta', text: part.text };
            break;
          case 'tool-call':
            output = true;
            pendingTools += 1;
            clearTimeout(timer);
            yield { type: 'tool_call', id: part.toolCallId, name: part.toolName, input: part.input };
            break;
          case 'tool-result':
            pendingTools = Math.max(0, pendingTools - 1);
            arm();
            yield { type: 'tool_result', id: part.toolCallId, name: part.toolName, output: part.output };
            break;
          case 'tool-error':
            // A tool that met the database away ends the turn: the model must not answer without it.
            throwIfInfrastructure(part.error);
            pendingTools = Math.max(0, pendingTools - 1);
            arm();
            yield {
              type: 'tool_result',
              id: part.toolCallId,
              name: part.toolName,
              output: null,
              error: part.error instanceof Error ? part.error.message : 'the tool failed',
            };
            break;
          case 'error':
            // The guarded fetch reads the workspace's address policy: the SDK wraps its failure.
            throwIfInfrastructure(part.error);
            throw failure(describeError(part.error));
          case 'abort':
            request.signal.throwIfAborted();
            if (timedOut) throw failure(`no output within ${provider.timeout_ms} ms`, true);
            throw failure('the call was aborted');
          case 'finish':
            usage = part.totalUsage;
            break;
        }
      }
      request.signal.throwIfAborted();
      if (timedOut) throw failure(`no output within ${provider.timeout_ms} ms`, true);
      const input = [request.system ?? '', ...request.messages.map((m) => m.content)].join('\n');
      const price = priceOf(settings, ref);
      const tokens = {
        input_tokens: usage?.inputTokens ?? estimateTokens(input),
        output_tokens: usage?.outputTokens ?? estimateTokens(text),
      };
      yield {
        type: 'finish',
        text,
        usage: tokens,
        cost: costOf(price, tokens),
        price,
        provider: ref.provider,
        model: ref.name,
        latency_ms: Math.round(now() - started),
        fallbacks: [],
      };
    } catch (error) {
      request.signal.throwIfAborted();
      if (error instanceof AttemptFailure) throw error;
      throwIfInfrastructure(error);
      if (timedOut) throw failure(`no output within ${provider.timeout_ms} ms`, true);
      throw failure(describeError(error));
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      inFlight.delete(controller);
      controller.abort(new Error('the turn ended'));
    }
  }

  async function* stream(request: ModelCall): AsyncGenerator<ModelEvent> {
    const started = now();
    request.signal.throwIfAborted();
    const settings = await settingsOf(deps.settings, request.workspaceId);
    const bound = request.tools ?? [];
    if (settings.providers.length === 0) {
      yield* streamLocalTurn(request, request.knowledge);
      return;
    }
    let tools: ToolSet | undefined;
    if (bound.length > 0) {
      const { tool, jsonSchema } = await loadSdk();
      tools = Object.fromEntries(
        bound.map((boundTool) => [
          boundTool.name,
          tool({
            description: boundTool.description,
            inputSchema: jsonSchema(boundTool.inputSchema, {
              validate: (value) => {
                const problems = boundTool.check(value);
                return problems.length === 0
                  ? { success: true, value }
                  : { success: false, error: new Error(`invalid arguments: ${problems.join('; ')}`) };
              },
            }),
            execute: (input: unknown, options: { abortSignal?: AbortSignal }) =>
              boundTool.execute(input, options.abortSignal ?? request.signal),
          }),
        ]),
      );
    }

    const fallbacks: Fallback[] = [];
    let onlyTimeouts = true;
    for (const ref of modelChain(settings, request.model)) {
      if (ref.provider === LOCAL_PROVIDER.provider) {
        // Never silent: the built-in provider reached after failed models says why, in its
        // text and in the finish's `degraded`, which a run step and a chat answer carry.
        const degraded =
          fallbacks.length > 0 ? `every model before local/echo failed: ${attemptsOf(fallbacks)}` : undefined;
        const notice = degraded
          ? `[local provider] No model answered (${attemptsOf(fallbacks)}), so the built-in local provider answers instead.`
          : '[local provider] This workspace names the built-in local provider as its model, so no model was called.';
        for await (const event of streamLocalTurn(request, request.knowledge, notice)) {
          yield event.type === 'finish'
            ? {
                ...event,
                fallbacks,
                latency_ms: Math.round(now() - started),
                ...(degraded ? { degraded } : {}),
              }
            : event;
        }
        return;
      }
      const provider = settings.providers.find((candidate) => candidate.id === ref.provider);
      if (!provider) {
        fallbacks.push({
          ...asAttempt(ref),
          error: `provider "${ref.provider}" is not configured in this workspace`,
        });
        onlyTimeouts = false;
        continue;
      }
      try {
        for await (const event of attempt(request, settings, ref, provider, tools)) {
          yield event.type === 'finish'
            ? { ...event, fallbacks, latency_ms: Math.round(now() - started) }
            : event;
        }
        return;
      } catch (error) {
        if (!(error instanceof AttemptFailure)) throw error;
        const where = `${ref.provider}/${ref.name}`;
        if (error.afterOutput) {
          throw new AppError(
            error.timeout ? 504 : 502,
            error.timeout ? 'provider_timeout' : 'provider_error',
            `${where} failed after its answer had started (no fallback once output has been sent): ${error.message}`,
          );
        }
        fallbacks.push({ ...asAttempt(ref), error: error.message });
        onlyTimeouts &&= error.timeout;
      }
    }
    const errors: FieldError[] = fallbacks.map((f) => ({
      field: `${f.provider}/${f.model}`,
      message: f.error,
    }));
    // The message carries each attempt's own error (its HTTP status and the provider's message),
    // so a run's step and `run.failed` keep them, not only a count.
    const tried = `(${fallbacks.length} tried): ${attemptsOf(fallbacks)}`;
    throw onlyTimeouts
      ? new AppError(504, 'provider_timeout', `every model timed out ${tried}`, errors)
      : new AppError(502, 'provider_error', `every model failed ${tried}`, errors);
  }

  /**
   * Embeddings through the same provider settings, keys and address guard as chat: one
   * `embedMany` call (the SDK splits large batches), no retries, bounded by the provider's
   * `timeout_ms`. Only `openai_compatible` providers have an embeddings endpoint.
   */
  async function embed(request: EmbedRequest): Promise<number[][]> {
    const settings = await settingsOf(deps.settings, request.workspaceId);
    const provider = settings.providers.find((candidate) => candidate.id === request.provider);
    if (provider?.kind !== 'openai_compatible') {
      throw new AppError(
        400,
        'validation_failed',
        provider
          ? `provider "${request.provider}" is ${provider.kind}, which has no embeddings endpoint`
          : `provider "${request.provider}" is not configured in this workspace`,
      );
    }
    if (request.texts.length === 0) return [];
    const where = `${provider.id}/${request.model}`;
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    request.signal?.addEventListener('abort', onAbort, { once: true });
    inFlight.add(controller);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('provider timeout'));
    }, provider.timeout_ms);
    let secrets: ProviderSecrets | undefined;
    try {
      secrets = await secretsOf(request, provider);
      const { key } = secrets;
      const keyHeaders =
        key !== undefined && provider.api_key_header ? { [provider.api_key_header]: key } : {};
      const { createOpenAICompatible, embedMany } = await loadSdk();
      const model = createOpenAICompatible({
        name: provider.id,
        baseURL: provider.base_url,
        ...(key !== undefined && !provider.api_key_header ? { apiKey: key } : {}),
        headers: { ...provider.headers, ...secrets.headers, ...keyHeaders },
        fetch: createGuardedFetch(() => deps.addressPolicy(request.workspaceId)),
      }).embeddingModel(request.model);
      const { embeddings } = await embedMany({
        model,
        values: request.texts,
        maxRetries: 0,
        abortSignal: controller.signal,
      });
      if (embeddings.length !== request.texts.length) {
        throw new AppError(
          502,
          'provider_error',
          `${where} answered ${embeddings.length} embeddings for ${request.texts.length} texts`,
        );
      }
      return embeddings;
    } catch (error) {
      request.signal?.throwIfAborted();
      throwIfInfrastructure(error);
      if (error instanceof AppError) throw error;
      if (timedOut) {
        throw new AppError(504, 'provider_timeout', `${where}: no answer within ${provider.timeout_ms} ms`);
      }
      const message = error instanceof AttemptFailure ? error.message : describeError(error);
      throw new AppError(502, 'provider_error', `${where}: ${scrub(message, secrets)}`);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      inFlight.delete(controller);
    }
  }

  /**
   * Probes the configured endpoints' model lists (no key: a probe never decrypts a secret), at
   * most `MAX_PROBES` a time, taking turns when there are more; an endpoint not probed this
   * time keeps its last result. Answers the platform-wide row (counts across tenants and the
   * workspaces whose endpoints all fail, for operators) and one row per workspace.
   */
  async function probe(): Promise<ProviderProbe> {
    const rows = await deps.settings.valuesAcrossWorkspaces('providers', 'providers');
    const configured = rows.filter((row) => row.value.length > 0);
    if (configured.length === 0) {
      lastSeen.clear();
      return {
        platform: {
          name: COMPONENT,
          status: 'not_configured',
          detail: 'no workspace configured a provider: the built-in local provider answers',
        },
        workspaces: new Map(),
      };
    }
    const endpoints = new Map<string, { url: string; workspaceId: string }>();
    const urlsOf = new Map<string, { urls: Set<string>; providers: number }>();
    for (const row of configured) {
      const urls = new Set<string>();
      for (const provider of row.value) {
        const url = `${provider.base_url.replace(/\/+$/, '')}/models`;
        urls.add(url);
        if (!endpoints.has(url)) endpoints.set(url, { url, workspaceId: row.workspaceId });
      }
      urlsOf.set(row.workspaceId, { urls, providers: row.value.length });
    }
    for (const url of lastSeen.keys()) if (!endpoints.has(url)) lastSeen.delete(url);
    const all = [...endpoints.values()];
    const start = probeOffset % all.length;
    const probed = [...all.slice(start), ...all.slice(0, start)].slice(0, MAX_PROBES);
    probeOffset = start + probed.length;
    const results = await Promise.all(
      probed.map(async ({ url, workspaceId }) => {
        const started = now();
        try {
          const fetch = createGuardedFetch(() => deps.addressPolicy(workspaceId));
          const response = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
          await response.body?.cancel();
          // Any answer but a server error means the endpoint is there (a 401 is expected: no key is sent).
          return { url, reachable: response.status < 500, latency: now() - started };
        } catch {
          return { url, reachable: false, latency: now() - started };
        }
      }),
    );
    for (const result of results) lastSeen.set(result.url, result);

    const workspaces = new Map<string, ComponentHealth>();
    const failing: string[] = [];
    for (const [workspaceId, { urls, providers }] of urlsOf) {
      const seen = [...urls].flatMap((url) => lastSeen.get(url) ?? []);
      const reachable = seen.filter((result) => result.reachable);
      const row = rowOf(
        reachable,
        `${providers} provider(s); ${reachable.length} of ${seen.length} probed endpoint(s) reachable`,
      );
      if (seen.length > 0 && reachable.length === 0) failing.push(workspaceId);
      workspaces.set(
        workspaceId,
        seen.length === 0
          ? { name: COMPONENT, status: 'up', detail: `${providers} provider(s); not probed yet` }
          : row,
      );
    }
    const reachable = results.filter((result) => result.reachable);
    const providers = configured.reduce((sum, row) => sum + row.value.length, 0);
    const failures =
      failing.length === 0
        ? ''
        : `; no endpoint reachable in workspace(s) ${failing.slice(0, MAX_PROBES).join(', ')}${failing.length > MAX_PROBES ? ` and ${failing.length - MAX_PROBES} more` : ''}`;
    return {
      platform: rowOf(
        reachable,
        `${providers} provider(s) in ${configured.length} workspace(s); ${reachable.length} of ${probed.length} probed endpoint(s) reachable${failures}`,
      ),
      workspaces,
    };
  }

  /**
   * Probes now, unless a probe is under way (then its result). A failed read of the provider
   * settings is the database's outage, not the providers' state: it is not kept, so the row
   * recovers with the database instead of a minute later.
   */
  function refresh(): Promise<ProviderProbe> {
    const at = now();
    probing ??= probe()
      .then(
        (result) => {
          known = { at, probe: result };
          return result;
        },
        (): ProviderProbe => ({
          platform: { name: COMPONENT, status: 'down', detail: 'the provider settings could not be read' },
          workspaces: new Map(),
          unread: true,
        }),
      )
      .finally(() => {
        probing = undefined;
      });
    return probing;
  }

  /**
   * The providers' last known state, at once: a health read never waits for a slow endpoint.
   * When it is older than `HEALTH_CACHE_MS` a new probe starts in the background, and the next
   * reads see its result. Only a read with no known state (the first) waits for a probe.
   */
  function lastProbe(): Promise<ProviderProbe> {
    if (!known) return refresh();
    if (now() - known.at > HEALTH_CACHE_MS) void refresh();
    return Promise.resolve(known.probe);
  }

  return {
    name: COMPONENT,
    start: async () => {},
    /** Aborts the provider calls in flight, so a shutdown does not wait for long answers. */
    stop: async () => {
      for (const controller of inFlight) controller.abort(new Error('the service is stopping'));
    },
    /**
     * `not_configured` while no workspace has a provider; otherwise whether the configured
     * endpoints answer a GET of `<base_url>/models` within 2 s (at most 10 endpoints per probe,
     * no key sent), probed again in the background after 60 s so health checks never wait for,
     * hammer or pay a provider. Its detail
     * counts across tenants and names failing workspaces: for platform operators only.
     */
    health: async () => (await lastProbe()).platform,
    async workspaceHealth(workspaceId) {
      const probed = await lastProbe();
      if (probed.unread) return probed.platform;
      return (
        probed.workspaces.get(workspaceId) ?? {
          name: COMPONENT,
          status: 'not_configured',
          detail: 'this workspace configured no provider: the built-in local provider answers',
        }
      );
    },
    stream,
    embed,
  };
}

/** The models to try in order: the request's (or the default), then the fallback list, each once. */
export function modelChain(
  settings: { default_model: ModelRef | null; fallback: ModelRef[] },
  requested: ModelRef | null | undefined,
): ModelRef[] {
  const chain: ModelRef[] = [];
  for (const ref of [requested ?? settings.default_model, ...settings.fallback]) {
    if (ref && !chain.some((seen) => seen.provider === ref.provider && seen.name === ref.name))
      chain.push(ref);
  }
  return chain;
}

/** The workspace's per-million prices of a model; null when it has none. */
export function priceOf(settings: { prices: ModelPrice[] }, ref: ModelRef): AppliedPrice | null {
  const price = settings.prices.find((p) => p.provider === ref.provider && p.name === ref.name);
  return price
    ? { input_per_million: price.input_per_million, output_per_million: price.output_per_million }
    : null;
}

/** Cost in the workspace's price unit; 0 without a price. */
export function costOf(
  price: AppliedPrice | null,
  usage: { input_tokens: number; output_tokens: number },
): number {
  if (!price) return 0;
  return (
    (usage.input_tokens * price.input_per_million + usage.output_tokens * price.output_per_million) /
    1_000_000
  );
}

const asAttempt = (ref: ModelRef) => ({ provider: ref.provider, model: ref.name });

/** A provider failure in a line: the HTTP status and the provider's message, or the network error. */
function describeError(error: unknown): string {
  if (loadedSdk?.APICallError.isInstance(error)) {
    const status = error.statusCode ? `HTTP ${error.statusCode}` : 'no HTTP answer';
    return `${status}: ${truncate(error.message)}`;
  }
  if (error instanceof AddressRefusedError) return error.message;
  if (error instanceof Error) {
    const code =
      (error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error as NodeJS.ErrnoException).code;
    return truncate(code ? `${error.message} (${code})` : error.message);
  }
  return 'the provider call failed';
}

/**
 * Rethrows the platform's own failure (the database away or busy, Redis down) found anywhere
 * in an error's cause chain, unwrapped: it is never a provider's failure, so it must not move
 * the turn to a fallback model, fail a run's step or answer 502.
 */
function throwIfInfrastructure(error: unknown): void {
  const infrastructure = infrastructureFailure(error);
  if (infrastructure) throw infrastructure;
}

/** The failed attempts of a turn on one line: `provider/model: error; ...`. */
const attemptsOf = (fallbacks: Fallback[]) =>
  fallbacks.map((attempt) => `${attempt.provider}/${attempt.model}: ${attempt.error}`).join('; ');

const truncate = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** Never lets a key into a message that reaches clients, steps or logs. */
function scrub(message: string, secrets: ProviderSecrets | undefined): string {
  const values = [secrets?.key, ...Object.values(secrets?.headers ?? {})];
  return values.reduce<string>(
    (text, value) => (value && value.length >= 4 ? text.split(value).join('[redacted]') : text),
    message,
  );
}
