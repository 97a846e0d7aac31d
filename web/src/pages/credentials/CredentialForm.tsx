import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useMemo, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { ApiError, api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Field } from '../../ui/Field.tsx';
import { fromLocalInput, splitList, toLocalInput } from '../../ui/format.ts';
import { Loading, ProblemAlert } from '../../ui/states.tsx';
import { DataFields, type DataValues, dataBody, initialValues } from './DataFields.tsx';
import { byCategory, type CredentialType, categoryLabel, useCredentialTypes } from './types.ts';

type Details = Schemas['CredentialDetails'];

/** Create a credential (`/credentials/new?type=<id>`) or edit one (`/credentials/:id/edit`). */
export default function CredentialForm() {
  const { id } = useParams();
  const types = useCredentialTypes();
  const existing = useQuery({
    queryKey: ['credential', id],
    queryFn: () => unwrap(api.GET('/api/credentials/{id}', { params: { path: { id: Number(id) } } })),
    enabled: id !== undefined,
  });
  if (types.isPending || (id && existing.isPending)) return <Loading what="the credential form" />;
  if (types.error) return <ProblemAlert error={types.error} />;
  if (id && existing.error) return <ProblemAlert error={existing.error} />;
  return <CredentialEditor types={types.data?.items ?? []} credential={existing.data} />;
}

function CredentialEditor({
  types,
  credential,
}: {
  types: CredentialType[];
  credential?: Details | undefined;
}) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { can } = useWorkspace();
  const [params] = useSearchParams();
  const [typeId, setTypeId] = useState(() =>
    String(credential?.credential_type_id ?? params.get('type') ?? ''),
  );
  const type = types.find((item) => String(item.id) === typeId);
  const fields = useMemo(() => type?.schema_definition ?? [], [type]);
  const initial = useMemo(
    () => (credential ? initialValues(fields, credential.data) : undefined),
    [credential, fields],
  );
  const [values, setValues] = useState<DataValues>(() => initial ?? initialValues(fields));
  const [name, setName] = useState(credential?.name ?? '');
  const [environment, setEnvironment] = useState(credential?.environment ?? 'production');
  const [description, setDescription] = useState(credential?.description ?? '');
  const [tags, setTags] = useState(credential?.tags.join(', ') ?? '');
  const [expires, setExpires] = useState(toLocalInput(credential?.expires_at));
  const [hosts, setHosts] = useState(credential?.allowed_hosts?.join(', ') ?? '');
  const [active, setActive] = useState(credential?.is_active ?? true);
  const operation = credential ? 'updateCredential' : 'createCredential';

  const chooseType = (value: string) => {
    setTypeId(value);
    const next = types.find((item) => String(item.id) === value);
    setValues(initialValues(next?.schema_definition ?? []));
  };

  const save = useMutation({
    mutationFn: async () => {
      const common = {
        name: name.trim(),
        environment: environment.trim() || 'production',
        description: description.trim() || null,
        tags: splitList(tags),
        expires_at: fromLocalInput(expires),
        ...(can('admin') ? { allowed_hosts: hosts.trim() ? splitList(hosts) : null } : {}),
      };
      if (credential) {
        const data = dataBody(fields, values, initial);
        return unwrap(
          api.PUT('/api/credentials/{id}', {
            params: { path: { id: credential.id } },
            body: { ...common, is_active: active, ...(Object.keys(data).length ? { data } : {}) },
          }),
        );
      }
      return unwrap(
        api.POST('/api/credentials', {
          body: { ...common, credential_type_id: Number(typeId), data: dataBody(fields, values) },
        }),
      );
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: ['credentials'] });
      void queryClient.invalidateQueries({ queryKey: ['credential', String(saved.id)] });
      void queryClient.invalidateQueries({ queryKey: ['credential-audit', String(saved.id)] });
      navigate(`/credentials/${saved.id}`);
    },
  });

  // Each entry's error names its index (body.allowed_hosts.2): all are shown under the one input.
  const hostErrors =
    save.error instanceof ApiError
      ? save.error.problem.errors
          ?.filter((error) => error.field.startsWith('body.allowed_hosts'))
          .map((error) => {
            const index = Number(error.field.split('.')[2]);
            const entry = Number.isInteger(index) ? splitList(hosts)[index] : undefined;
            return entry ? `${entry}: ${error.message}` : error.message;
          })
          .join('; ') || undefined
      : undefined;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };

  return (
    <>
      <h1>
        {credential
          ? `Edit ${credential.name}`
          : type
            ? `New ${type.display_name} credential`
            : 'New credential'}
      </h1>
      <form className="narrow" onSubmit={submit}>
        <ProblemAlert error={save.error} title="The credential was not saved" />
        {credential ? (
          <p className="muted">Type: {type?.display_name ?? credential.credential_type}</p>
        ) : (
          <Field
            label="Type"
            operation={operation}
            name="credential_type_id"
            error={save.error}
            hint={type?.description}
          >
            {(props) => (
              <select {...props} value={typeId} onChange={(event) => chooseType(event.target.value)}>
                <option value="" disabled>
                  Choose a type…
                </option>
                {byCategory(types).map(([category, items]) => (
                  <optgroup key={category} label={categoryLabel(category)}>
                    {items.map((item) => (
                      <option key={item.id} value={item.id}>
                        {item.display_name}
                      </option>
                    ))}
                  </optgroup>
                ))}
              </select>
            )}
          </Field>
        )}
        <Field label="Name" operation={operation} name="name" error={save.error}>
          {(props) => <input {...props} value={name} onChange={(event) => setName(event.target.value)} />}
        </Field>
        {type && (
          <DataFields
            fields={fields}
            values={values}
            onChange={(field, value) => setValues((current) => ({ ...current, [field]: value }))}
            error={save.error}
            editing={Boolean(credential)}
          />
        )}
        <div className="row">
          <Field
            label="Environment"
            operation={operation}
            name="environment"
            error={save.error}
            hint="production, staging, development…"
          >
            {(props) => (
              <input
                {...props}
                list="credential-environments"
                value={environment}
                onChange={(event) => setEnvironment(event.target.value)}
              />
            )}
          </Field>
          <datalist id="credential-environments">
            <option value="production" />
            <option value="staging" />
            <option value="development" />
          </datalist>
          <Field
            label="Expires"
            operation={operation}
            name="expires_at"
            error={save.error}
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
        <Field label="Tags" operation={operation} name="tags" error={save.error} hint="Separated by commas">
          {(props) => <input {...props} value={tags} onChange={(event) => setTags(event.target.value)} />}
        </Field>
        <Field label="Description" operation={operation} name="description" error={save.error}>
          {(props) => (
            <textarea
              {...props}
              value={description}
              onChange={(event) => setDescription(event.target.value)}
            />
          )}
        </Field>
        {can('admin') && (
          <div className="field">
            <label htmlFor="credential-hosts">Allowed hosts</label>
            <input
              id="credential-hosts"
              value={hosts}
              onChange={(event) => setHosts(event.target.value)}
              aria-invalid={Boolean(hostErrors)}
              aria-describedby={`credential-hosts-hint${hostErrors ? ' credential-hosts-error' : ''}`}
            />
            <div className="hint" id="credential-hosts-hint">
              Where tools may send the secrets, separated by commas. Empty: the test URL’s host
            </div>
            {hostErrors && (
              <div className="error" id="credential-hosts-error">
                {hostErrors}
              </div>
            )}
          </div>
        )}
        {credential && (
          <div className="field toggle">
            <input
              id="credential-active"
              type="checkbox"
              role="switch"
              aria-checked={active}
              checked={active}
              onChange={(event) => setActive(event.target.checked)}
            />
            <label htmlFor="credential-active">Active</label>
          </div>
        )}
        <div className="row">
          <button type="submit" className="primary" disabled={save.isPending || !type}>
            {credential ? 'Save credential' : 'Create credential'}
          </button>
          <Link className="button" to={credential ? `/credentials/${credential.id}` : '/credentials'}>
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
