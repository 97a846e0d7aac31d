import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ApiError, api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { formatCost } from '../../ui/format.ts';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

type Settings = Awaited<ReturnType<typeof loadSettings>>;
type Provider = Settings['providers'][number];
type Price = Settings['prices'][number];
type ModelRef = Settings['fallback'][number];
const loadSettings = () => unwrap(api.GET('/api/settings/providers'));

/** Rows of an editable list carry a key of their own, so React keeps each row's inputs. */
let nextKey = 0;
const keyed = <T,>(value: T) => ({ key: `row-${++nextKey}`, value });
type Row<T> = { key: string; value: T };

export function ProvidersSettings() {
  const { can } = useWorkspace();
  const settings = useQuery({ queryKey: ['provider-settings'], queryFn: loadSettings });
  return (
    <section aria-labelledby="providers-heading">
      <h2 id="providers-heading">Model providers</h2>
      <p className="muted">
        With no provider, the built-in <code>local</code> provider answers (an echo, free). Keys are vault
        credentials, chosen here by name and never shown.
      </p>
      {!can('admin') && <ReadOnly needs="the admin role" />}
      <ProblemAlert error={settings.error} />
      {settings.isPending && <Loading what="the provider settings" />}
      {settings.data &&
        (can('admin') ? (
          <ProvidersForm settings={settings.data} />
        ) : (
          <ProvidersView settings={settings.data} />
        ))}
    </section>
  );
}

function useVaultCredentials() {
  return useQuery({
    queryKey: ['credentials', 'for-providers'],
    queryFn: () =>
      unwrap(api.GET('/api/credentials', { params: { query: { limit: 200, is_active: true } } })),
  });
}

function ProvidersView({ settings }: { settings: Settings }) {
  const credentials = useVaultCredentials();
  const credentialName = (id: number | null) =>
    id === null
      ? 'none'
      : (credentials.data?.items.find((item) => item.id === id)?.name ?? `credential ${id}`);
  return (
    <div className="stack">
      {settings.providers.length === 0 ? (
        <Empty>No provider configured: the built-in local provider answers.</Empty>
      ) : (
        <div className="table-wrap">
          <table>
            <caption>Providers</caption>
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Kind</th>
                <th scope="col">Base URL</th>
                <th scope="col">Key</th>
                <th scope="col">Timeout</th>
              </tr>
            </thead>
            <tbody>
              {settings.providers.map((provider) => (
                <tr key={provider.id}>
                  <th scope="row">{provider.id}</th>
                  <td>{provider.kind}</td>
                  <td>{provider.base_url}</td>
                  <td>{credentialName(provider.credential_id)}</td>
                  <td>{provider.timeout_ms} ms</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p>
        Default model:{' '}
        {settings.default_model
          ? `${settings.default_model.provider} / ${settings.default_model.name}`
          : 'none'}
      </p>
      <div className="table-wrap">
        <table>
          <caption>Prices per million tokens</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Input</th>
              <th scope="col">Output</th>
            </tr>
          </thead>
          <tbody>
            {settings.prices.map((price) => (
              <tr key={`${price.provider}/${price.name}`}>
                <th scope="row">
                  {price.provider} / {price.name}
                </th>
                <td>{formatCost(price.input_per_million)}</td>
                <td>{formatCost(price.output_per_million)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p>
        Fallback:{' '}
        {settings.fallback.length
          ? settings.fallback.map((model) => `${model.provider} / ${model.name}`).join(' → ')
          : 'none'}
      </p>
    </div>
  );
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
};

function ProvidersForm({ settings }: { settings: Settings }) {
  const queryClient = useQueryClient();
  const credentials = useVaultCredentials();
  const [providers, setProviders] = useState<Row<Provider>[]>(() => settings.providers.map(keyed));
  const [defaultProvider, setDefaultProvider] = useState(settings.default_model?.provider ?? '');
  const [defaultName, setDefaultName] = useState(settings.default_model?.name ?? '');
  const [prices, setPrices] = useState<Row<Price>[]>(() => settings.prices.map(keyed));
  const [fallback, setFallback] = useState<Row<ModelRef>[]>(() => settings.fallback.map(keyed));

  const save = useMutation({
    mutationFn: (confirm: boolean) =>
      unwrap(
        api.PUT('/api/settings/providers', {
          body: {
            providers: providers.map(({ value }) => ({
              id: value.id.trim(),
              kind: value.kind,
              base_url: value.base_url.trim(),
              credential_id: value.credential_id,
              api_key_header: value.api_key_header || null,
              headers: value.headers,
              ...(value.secret_headers ? { secret_headers: value.secret_headers } : {}),
              timeout_ms: value.timeout_ms,
            })),
            default_model:
              defaultProvider.trim() && defaultName.trim()
                ? { provider: defaultProvider.trim(), name: defaultName.trim() }
                : null,
            prices: prices.map(({ value }) => value),
            fallback: fallback.map(({ value }) => value),
            ...(confirm
              ? {
                  confirm_hosts: providers
                    .map(({ value }) => hostOf(value.base_url))
                    .filter((host): host is string => Boolean(host)),
                }
              : {}),
          },
        }),
      ),
    onSuccess: (saved) => queryClient.setQueryData(['provider-settings'], saved),
  });
  const needsConfirmation =
    save.error instanceof ApiError && save.error.problem.code === 'confirmation_required';
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(false);
  };
  const fieldError = (name: string) =>
    save.error instanceof ApiError ? save.error.fieldError(name) : undefined;
  const update = <T,>(set: React.Dispatch<React.SetStateAction<Row<T>[]>>, key: string, change: Partial<T>) =>
    set((rows) =>
      rows.map((row) => (row.key === key ? { ...row, value: { ...row.value, ...change } } : row)),
    );
  const ids = providers.map(({ value }) => value.id).filter(Boolean);

  return (
    <form onSubmit={submit} className="stack">
      <ProblemAlert error={save.error} title="The provider settings were not saved" />
      {needsConfirmation && (
        <button type="button" className="danger" onClick={() => save.mutate(true)}>
          Confirm the new hosts and save
        </button>
      )}
      {save.isSuccess && (
        <p className="alert info" role="status">
          Provider settings saved.
        </p>
      )}
      <fieldset className="card">
        <legend>Providers</legend>
        {providers.length === 0 && <p className="muted">None: the built-in local provider answers.</p>}
        {providers.map(({ key, value }, index) => (
          <fieldset key={key} className="subgroup">
            <legend>Provider {index + 1}</legend>
            <div className="row">
              <Input
                id={`${key}-id`}
                label="Provider id"
                value={value.id}
                error={fieldError(`providers.${index}.id`)}
                onChange={(id) => update(setProviders, key, { id })}
                required
              />
              <div className="field">
                <label htmlFor={`${key}-kind`}>Kind</label>
                <select
                  id={`${key}-kind`}
                  value={value.kind}
                  onChange={(event) =>
                    update(setProviders, key, { kind: event.target.value as Provider['kind'] })
                  }
                >
                  <option value="openai_compatible">OpenAI-compatible</option>
                  <option value="anthropic">Anthropic</option>
                </select>
              </div>
              <Input
                id={`${key}-url`}
                label="Base URL"
                wide
                type="url"
                value={value.base_url}
                error={fieldError(`providers.${index}.base_url`)}
                onChange={(base_url) => update(setProviders, key, { base_url })}
                required
              />
              <div className="field">
                <label htmlFor={`${key}-key`}>API key from the vault</label>
                <select
                  id={`${key}-key`}
                  value={value.credential_id ?? ''}
                  aria-invalid={Boolean(fieldError(`providers.${index}.credential_id`))}
                  onChange={(event) =>
                    update(setProviders, key, {
                      credential_id: event.target.value ? Number(event.target.value) : null,
                    })
                  }
                >
                  <option value="">None (a keyless local server)</option>
                  {credentials.data?.items.map((credential) => (
                    <option key={credential.id} value={credential.id}>
                      {credential.name} ({credential.credential_type}, {credential.environment})
                    </option>
                  ))}
                  {value.credential_id !== null &&
                    credentials.data &&
                    !credentials.data.items.some((credential) => credential.id === value.credential_id) && (
                      <option value={value.credential_id}>credential {value.credential_id}</option>
                    )}
                </select>
                {fieldError(`providers.${index}.credential_id`) && (
                  <div className="error">{fieldError(`providers.${index}.credential_id`)}</div>
                )}
              </div>
              <Input
                id={`${key}-timeout`}
                label="Timeout (ms)"
                type="number"
                value={String(value.timeout_ms)}
                error={fieldError(`providers.${index}.timeout_ms`)}
                onChange={(timeout) => update(setProviders, key, { timeout_ms: Number(timeout) })}
              />
            </div>
            <button
              type="button"
              onClick={() => setProviders((rows) => rows.filter((row) => row.key !== key))}
            >
              Remove provider {value.id || index + 1}
            </button>
          </fieldset>
        ))}
        <button
          type="button"
          onClick={() =>
            setProviders((rows) => [
              ...rows,
              keyed<Provider>({
                id: '',
                kind: 'openai_compatible',
                base_url: '',
                credential_id: null,
                api_key_header: null,
                headers: {},
                timeout_ms: 60_000,
              }),
            ])
          }
        >
          Add provider
        </button>
      </fieldset>

      <fieldset className="card">
        <legend>Default model</legend>
        <div className="row">
          <div className="field">
            <label htmlFor="default-provider">Default provider</label>
            <input
              id="default-provider"
              list="provider-ids"
              value={defaultProvider}
              onChange={(event) => setDefaultProvider(event.target.value)}
            />
          </div>
          <Input
            id="default-name"
            label="Default model name"
            value={defaultName}
            error={fieldError('default_model.name') ?? fieldError('default_model')}
            onChange={setDefaultName}
          />
        </div>
        <datalist id="provider-ids">
          {ids.map((id) => (
            <option key={id} value={id} />
          ))}
        </datalist>
      </fieldset>

      <fieldset className="card">
        <legend>Prices (per million tokens)</legend>
        {prices.map(({ key, value }, index) => (
          <div key={key} className="row">
            <Input
              id={`${key}-provider`}
              label={`Price ${index + 1} provider`}
              value={value.provider}
              list="provider-ids"
              error={fieldError(`prices.${index}.provider`)}
              onChange={(provider) => update(setPrices, key, { provider })}
              required
            />
            <Input
              id={`${key}-name`}
              label={`Price ${index + 1} model`}
              value={value.name}
              error={fieldError(`prices.${index}.name`)}
              onChange={(name) => update(setPrices, key, { name })}
              required
            />
            <Input
              id={`${key}-in`}
              label="Input"
              type="number"
              step="any"
              value={String(value.input_per_million)}
              error={fieldError(`prices.${index}.input_per_million`)}
              onChange={(input) => update(setPrices, key, { input_per_million: Number(input) })}
            />
            <Input
              id={`${key}-out`}
              label="Output"
              type="number"
              step="any"
              value={String(value.output_per_million)}
              error={fieldError(`prices.${index}.output_per_million`)}
              onChange={(output) => update(setPrices, key, { output_per_million: Number(output) })}
            />
            <button type="button" onClick={() => setPrices((rows) => rows.filter((row) => row.key !== key))}>
              Remove price {index + 1}
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() =>
            setPrices((rows) => [
              ...rows,
              keyed<Price>({ provider: ids[0] ?? '', name: '', input_per_million: 0, output_per_million: 0 }),
            ])
          }
        >
          Add price
        </button>
      </fieldset>

      <fieldset className="card">
        <legend>Fallback, in order</legend>
        {fallback.map(({ key, value }, index) => (
          <div key={key} className="row">
            <Input
              id={`${key}-provider`}
              label={`Fallback ${index + 1} provider`}
              value={value.provider}
              list="provider-ids"
              error={fieldError(`fallback.${index}.provider`)}
              onChange={(provider) => update(setFallback, key, { provider })}
              required
            />
            <Input
              id={`${key}-name`}
              label={`Fallback ${index + 1} model`}
              value={value.name}
              error={fieldError(`fallback.${index}.name`)}
              onChange={(name) => update(setFallback, key, { name })}
              required
            />
            <button
              type="button"
              onClick={() => setFallback((rows) => rows.filter((row) => row.key !== key))}
            >
              Remove fallback {index + 1}
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() =>
            setFallback((rows) => [...rows, keyed<ModelRef>({ provider: ids[0] ?? '', name: '' })])
          }
        >
          Add fallback
        </button>
      </fieldset>
      <div>
        <button type="submit" className="primary" disabled={save.isPending}>
          Save provider settings
        </button>
      </div>
    </form>
  );
}

function Input({
  id,
  label,
  value,
  onChange,
  error,
  type = 'text',
  wide = false,
  ...rest
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error?: string | undefined;
  type?: string;
  wide?: boolean;
  required?: boolean;
  list?: string;
  step?: string;
}) {
  return (
    <div className={wide ? 'field wide' : 'field'}>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type={type}
        value={value}
        aria-invalid={Boolean(error)}
        {...(error ? { 'aria-describedby': `${id}-error` } : {})}
        onChange={(event) => onChange(event.target.value)}
        {...rest}
      />
      {error && (
        <div className="error" id={`${id}-error`}>
          {error}
        </div>
      )}
    </div>
  );
}
