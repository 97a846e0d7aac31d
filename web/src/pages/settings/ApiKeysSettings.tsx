import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Badge } from '../../ui/Badge.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime, fromLocalInput } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

const PAGE = 20;

export function ApiKeysSettings() {
  const { can } = useWorkspace();
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      {can('admin') ? <ApiKeys /> : <ReadOnly needs="the admin role (API keys are listed to admins only)" />}
    </section>
  );
}

function ApiKeys() {
  const queryClient = useQueryClient();
  const [offset, setOffset] = useState(0);
  const keys = useQuery({
    queryKey: ['api-keys', offset],
    queryFn: () =>
      unwrap(api.GET('/api/workspaces/api-keys', { params: { query: { limit: PAGE, offset } } })),
    placeholderData: keepPreviousData,
  });
  const revoke = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.DELETE('/api/workspaces/api-keys/{id}', { params: { path: { id } } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['api-keys'] }),
  });
  return (
    <>
      <ProblemAlert error={keys.error} />
      <ProblemAlert error={revoke.error} title="The key was not revoked" />
      {keys.isPending && <Loading what="API keys" />}
      {keys.data && keys.data.total === 0 && <Empty>No API keys yet.</Empty>}
      {keys.data && keys.data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.items.map((key) => (
                <tr key={key.id}>
                  <th scope="row">{key.name}</th>
                  <td>
                    <code>{key.prefix}</code>
                  </td>
                  <td>
                    <Badge value={key.status} tone={key.status === 'active' ? 'ok' : 'neutral'} />
                  </td>
                  <td>
                    {formatTime(key.created_at)}
                    <div className="muted">{key.created_by}</div>
                  </td>
                  <td>{key.expires_at ? formatTime(key.expires_at) : 'never'}</td>
                  <td>{key.last_used_at ? formatTime(key.last_used_at) : 'never'}</td>
                  <td>
                    {key.status === 'active' && (
                      <ConfirmButton
                        label={`Revoke ${key.name}`}
                        question={`Revoke ${key.name}? Calls with it stop at once.`}
                        confirmLabel="Yes, revoke"
                        onConfirm={() => revoke.mutate(key.id)}
                        disabled={revoke.isPending}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {keys.data && (
        <Pager label="API keys" offset={offset} limit={PAGE} total={keys.data.total} onChange={setOffset} />
      )}
      <NewKey />
    </>
  );
}

function NewKey() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const create = useMutation({
    mutationFn: () => {
      const expiresAt = fromLocalInput(expires);
      return unwrap(
        api.POST('/api/workspaces/api-keys', {
          body: { name: name.trim(), ...(expiresAt ? { expires_at: expiresAt } : {}) },
        }),
      );
    },
    onSuccess: () => {
      setName('');
      setExpires('');
      void queryClient.invalidateQueries({ queryKey: ['api-keys'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="new-key">
      <h3 id="new-key">New API key</h3>
      <ProblemAlert error={create.error} title="The key was not created" />
      {create.data && (
        <div className="alert info" role="status">
          <strong>Copy the key now: it is shown only once.</strong>
          <pre>{create.data.key}</pre>
        </div>
      )}
      <div className="row">
        <Field label="Key name" operation="createApiKey" name="name" error={create.error}>
          {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
        </Field>
        <Field
          label="Expires"
          operation="createApiKey"
          name="expires_at"
          error={create.error}
          hint="Empty: never"
        >
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={expires}
              onChange={(event) => setExpires(event.target.value)}
            />
          )}
        </Field>
      </div>
      <button type="submit" className="primary" disabled={create.isPending}>
        Create API key
      </button>
    </form>
  );
}
