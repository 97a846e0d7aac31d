import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

type Flag = Schemas['Flag'];
type FlagType = Flag['type'];
const PAGE = 20;

/** The definition a PUT replaces, from a flag as the API answered it. */
const definitionOf = (flag: Flag) => ({
  type: flag.type,
  default: flag.default,
  description: flag.description,
  enabled: flag.enabled,
  variants: flag.variants,
  rules: flag.rules,
  rollout: flag.rollout,
  salt: flag.salt,
});

const show = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

export function FlagsSettings() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const [offset, setOffset] = useState(0);
  const flags = useQuery({
    queryKey: ['flags', offset],
    queryFn: () => unwrap(api.GET('/api/settings/flags', { params: { query: { limit: PAGE, offset } } })),
    placeholderData: keepPreviousData,
  });
  const toggle = useMutation({
    mutationFn: (flag: Flag) =>
      unwrap(
        api.PUT('/api/settings/flags/{key}', {
          params: { path: { key: flag.key }, header: flag.etag ? { 'if-match': flag.etag } : {} },
          body: { ...definitionOf(flag), enabled: !flag.enabled },
        }),
      ),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['flags'] }),
  });
  const admin = can('admin');

  return (
    <section aria-labelledby="flags-heading">
      <h2 id="flags-heading">Feature flags</h2>
      {!admin && <ReadOnly needs="the admin role" />}
      <ProblemAlert error={flags.error} />
      <ProblemAlert error={toggle.error} title="The flag was not changed" />
      {flags.isPending && <Loading what="feature flags" />}
      {flags.data && flags.data.total === 0 && <Empty>No feature flags yet.</Empty>}
      {flags.data && flags.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Feature flags</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Type</th>
                <th scope="col">Default</th>
                <th scope="col">Enabled</th>
                <th scope="col">Changed</th>
              </tr>
            </thead>
            <tbody>
              {flags.data.items.map((flag) => (
                <tr key={flag.key}>
                  <th scope="row">
                    <code>{flag.key}</code> {flag.built_in && <Badge value="built-in" tone="neutral" />}
                    {flag.description && <div className="muted">{flag.description}</div>}
                  </th>
                  <td>{flag.type}</td>
                  <td>
                    <code>{show(flag.default)}</code>
                    {Object.keys(flag.variants).length > 0 && (
                      <div className="muted">variants: {Object.keys(flag.variants).join(', ')}</div>
                    )}
                  </td>
                  <td>
                    {admin ? (
                      <span className="toggle">
                        <input
                          id={`flag-${flag.key}`}
                          type="checkbox"
                          role="switch"
                          aria-checked={flag.enabled}
                          checked={flag.enabled}
                          disabled={toggle.isPending}
                          onChange={() => toggle.mutate(flag)}
                        />
                        <label htmlFor={`flag-${flag.key}`}>
                          <span className="visually-hidden">Enable {flag.key}</span>
                        </label>
                        <span aria-hidden="true">{flag.enabled ? 'on' : 'off'}</span>
                      </span>
                    ) : (
                      <Badge value={flag.enabled ? 'on' : 'off'} tone={flag.enabled ? 'ok' : 'neutral'} />
                    )}
                  </td>
                  <td>
                    {flag.updated_at ? formatTime(flag.updated_at) : 'never'}
                    {flag.updated_by && <div className="muted">{flag.updated_by}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {flags.data && (
        <Pager
          label="Feature flags"
          offset={offset}
          limit={PAGE}
          total={flags.data.total}
          onChange={setOffset}
        />
      )}
      {admin && <NewFlag />}
    </section>
  );
}

function parseDefault(type: FlagType, text: string): unknown {
  if (type === 'boolean') return text === 'true';
  if (type === 'number') return Number(text);
  if (type === 'json') return JSON.parse(text || 'null');
  return text;
}

function NewFlag() {
  const queryClient = useQueryClient();
  const [key, setKey] = useState('');
  const [type, setType] = useState<FlagType>('boolean');
  const [value, setValue] = useState('false');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/api/settings/flags/{key}', {
          params: { path: { key: key.trim() } },
          body: { type, default: parseDefault(type, value), description: description.trim(), enabled: true },
        }),
      ),
    onSuccess: () => {
      setKey('');
      setDescription('');
      void queryClient.invalidateQueries({ queryKey: ['flags'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="new-flag">
      <h3 id="new-flag">New flag</h3>
      <ProblemAlert error={create.error} title="The flag was not saved" />
      <div className="field">
        <label htmlFor="flag-key">Key</label>
        <input
          id="flag-key"
          required
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]*"
          value={key}
          onChange={(event) => setKey(event.target.value)}
          placeholder="checkout.new-flow"
        />
      </div>
      <div className="row">
        <Field label="Type" operation="putFlag" name="type" error={create.error}>
          {(props) => (
            <select
              {...props}
              value={type}
              onChange={(event) => {
                const next = event.target.value as FlagType;
                setType(next);
                setValue(
                  next === 'boolean' ? 'false' : next === 'number' ? '0' : next === 'json' ? '{}' : '',
                );
              }}
            >
              <option value="boolean">boolean</option>
              <option value="string">string</option>
              <option value="number">number</option>
              <option value="json">json</option>
            </select>
          )}
        </Field>
        <Field label="Default value" operation="putFlag" name="default" error={create.error}>
          {(props) =>
            type === 'boolean' ? (
              <select {...props} value={value} onChange={(event) => setValue(event.target.value)}>
                <option value="false">false</option>
                <option value="true">true</option>
              </select>
            ) : (
              <input
                {...props}
                type={type === 'number' ? 'number' : 'text'}
                value={value}
                onChange={(event) => setValue(event.target.value)}
              />
            )
          }
        </Field>
      </div>
      <Field label="Description" operation="putFlag" name="description" error={create.error}>
        {(props) => (
          <input {...props} value={description} onChange={(event) => setDescription(event.target.value)} />
        )}
      </Field>
      <button type="submit" className="primary" disabled={create.isPending}>
        Create flag
      </button>
    </form>
  );
}
