import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';

type Tenant = Schemas['Tenant'];
const PAGE = 10;

/**
 * The tenants the caller administers (an owner of one of its workspaces, or a platform
 * operator): the API lists no other, so each one listed can be changed here.
 */
export function TenantsSettings() {
  const [offset, setOffset] = useState(0);
  const tenants = useQuery({
    queryKey: ['tenants', offset],
    queryFn: () => unwrap(api.GET('/api/settings/tenants', { params: { query: { limit: PAGE, offset } } })),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="tenants-heading">
      <h2 id="tenants-heading">Tenants</h2>
      <p className="muted">
        The tenants you administer: you own one of their workspaces. A tenant’s time zone sets when its
        nightly playbook mining runs; its default model is what new workspaces start with.
      </p>
      <ProblemAlert error={tenants.error} />
      {tenants.isPending && <Loading what="tenants" />}
      {tenants.data && tenants.data.total === 0 && <Empty>You administer no tenant.</Empty>}
      <div className="stack">
        {tenants.data?.items.map((tenant) => (
          <TenantCard key={`${tenant.id}:${tenant.updated_at}`} tenant={tenant} />
        ))}
      </div>
      {tenants.data && (
        <Pager label="Tenants" offset={offset} limit={PAGE} total={tenants.data.total} onChange={setOffset} />
      )}
      <NewTenant />
    </section>
  );
}

function TenantCard({ tenant }: { tenant: Tenant }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState(tenant.name);
  const [zone, setZone] = useState(tenant.time_zone ?? '');
  const [provider, setProvider] = useState(tenant.default_model?.provider ?? '');
  const [model, setModel] = useState(tenant.default_model?.name ?? '');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['tenants'] });
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/api/settings/tenants/{id}', {
          params: { path: { id: tenant.id } },
          body: {
            name: name.trim(),
            time_zone: zone.trim() || null,
            default_model:
              provider.trim() && model.trim() ? { provider: provider.trim(), name: model.trim() } : null,
          },
        }),
      ),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE('/api/settings/tenants/{id}', {
          params: { path: { id: tenant.id }, query: { confirm: tenant.name } },
        }),
      ),
    onSuccess: () => {
      void refresh();
      void queryClient.invalidateQueries({ queryKey: ['workspaces'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  const headingId = `tenant-${tenant.id}`;
  return (
    <form className="card" onSubmit={submit} aria-labelledby={headingId}>
      <h3 id={headingId}>{tenant.name}</h3>
      <p className="muted">
        Created {formatTime(tenant.created_at)}. Workspaces:{' '}
        {tenant.workspaces.length ? tenant.workspaces.map((workspace) => workspace.name).join(', ') : 'none'}
      </p>
      <ProblemAlert error={save.error} title="The tenant was not saved" />
      <ProblemAlert error={remove.error} title="The tenant was not deleted" />
      <div className="row">
        <Field label="Tenant name" operation="updateTenant" name="name" error={save.error}>
          {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
        </Field>
        <Field
          label="Time zone"
          operation="updateTenant"
          name="time_zone"
          error={save.error}
          hint="IANA name, e.g. Europe/Paris"
        >
          {(props) => <input {...props} value={zone} onChange={(event) => setZone(event.target.value)} />}
        </Field>
        <Field
          label="Default model provider"
          operation="updateTenant"
          name="default_model.provider"
          error={save.error}
        >
          {(props) => (
            <input
              {...props}
              required={false}
              value={provider}
              onChange={(event) => setProvider(event.target.value)}
            />
          )}
        </Field>
        <Field
          label="Default model name"
          operation="updateTenant"
          name="default_model.name"
          error={save.error}
        >
          {(props) => (
            <input
              {...props}
              required={false}
              value={model}
              onChange={(event) => setModel(event.target.value)}
            />
          )}
        </Field>
      </div>
      <div className="row">
        <button type="submit" className="primary" disabled={save.isPending}>
          Save tenant
        </button>
        <ConfirmButton
          label="Delete tenant"
          question={`Delete ${tenant.name} and its ${tenant.workspaces.length} workspace(s)?`}
          confirmLabel="Yes, delete the tenant"
          onConfirm={() => remove.mutate()}
          disabled={remove.isPending}
        />
      </div>
    </form>
  );
}

function NewTenant() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [workspace, setWorkspace] = useState('');
  const [zone, setZone] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/settings/tenants', {
          body: {
            name: name.trim(),
            ...(workspace.trim() ? { workspace_name: workspace.trim() } : {}),
            ...(zone.trim() ? { time_zone: zone.trim() } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setName('');
      setWorkspace('');
      setZone('');
      void queryClient.invalidateQueries({ queryKey: ['tenants'] });
      void queryClient.invalidateQueries({ queryKey: ['workspaces'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="new-tenant">
      <h3 id="new-tenant">New tenant</h3>
      <ProblemAlert error={create.error} title="The tenant was not created" />
      <Field label="Name of the new tenant" operation="createTenant" name="name" error={create.error}>
        {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
      </Field>
      <div className="row">
        <Field
          label="First workspace"
          operation="createTenant"
          name="workspace_name"
          error={create.error}
          hint="Optional: you become its owner"
        >
          {(props) => (
            <input {...props} value={workspace} onChange={(event) => setWorkspace(event.target.value)} />
          )}
        </Field>
        <Field
          label="Time zone of the new tenant"
          operation="createTenant"
          name="time_zone"
          error={create.error}
        >
          {(props) => <input {...props} value={zone} onChange={(event) => setZone(event.target.value)} />}
        </Field>
      </div>
      <button type="submit" className="primary" disabled={create.isPending}>
        Create tenant
      </button>
    </form>
  );
}
