import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

type Cors = NonNullable<Awaited<ReturnType<typeof loadCors>>>;
type Method = Cors['methods'][number];
const loadCors = () => unwrap(api.GET('/api/settings/cors'));
const METHODS: Method[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((line) => line.trim())
    .filter(Boolean);

/**
 * The platform-wide CORS policy: any signed-in user reads it, platform operators
 * (PLATFORM_ADMIN_USERS) change it; the API answers anyone else 403 platform_admin_required,
 * shown beside the form.
 */
export function CorsSettings() {
  const { can } = useWorkspace();
  const cors = useQuery({ queryKey: ['cors'], queryFn: loadCors });
  return (
    <section aria-labelledby="cors-heading">
      <h2 id="cors-heading">CORS</h2>
      <p className="muted">
        One policy for the whole platform: the browser origins allowed to call the API. Read by everyone,
        changed by platform operators only.
      </p>
      <ProblemAlert error={cors.error} />
      {cors.isPending && <Loading what="the CORS policy" />}
      {cors.data &&
        (can('admin') ? (
          <CorsForm cors={cors.data} />
        ) : (
          <>
            <ReadOnly needs="a platform operator (PLATFORM_ADMIN_USERS)" />
            <CorsView cors={cors.data} />
          </>
        ))}
    </section>
  );
}

function CorsForm({ cors }: { cors: Cors }) {
  const queryClient = useQueryClient();
  const [origins, setOrigins] = useState(cors.origins.join('\n'));
  const [methods, setMethods] = useState<Method[]>(cors.methods);
  const [headers, setHeaders] = useState(cors.headers.join(', '));
  const [exposed, setExposed] = useState(cors.exposed_headers.join(', '));
  const [credentials, setCredentials] = useState(cors.credentials);
  const [maxAge, setMaxAge] = useState(String(cors.max_age));
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/api/settings/cors', {
          body: {
            origins: lines(origins),
            methods,
            headers: lines(headers),
            exposed_headers: lines(exposed),
            credentials,
            max_age: Number(maxAge),
          },
        }),
      ),
    onSuccess: (saved) => queryClient.setQueryData(['cors'], saved),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit}>
      <ProblemAlert error={save.error} title="The CORS policy was not saved" />
      {save.isSuccess && (
        <p className="alert info" role="status">
          Saved: every API process applies it at once.
        </p>
      )}
      <p className="muted">
        {cors.version
          ? `Version ${cors.version}, changed ${formatTime(cors.updated_at)} by ${cors.updated_by ?? '—'}`
          : 'Never set: no origin is allowed.'}
      </p>
      <Field
        label="Allowed origins"
        operation="replaceCorsSettings"
        name="origins"
        error={save.error}
        hint="One per line: https://app.example.com, https://*.example.com or *"
      >
        {(props) => (
          <textarea {...props} value={origins} onChange={(event) => setOrigins(event.target.value)} />
        )}
      </Field>
      <fieldset className="field">
        <legend>Methods</legend>
        <div className="row">
          {METHODS.map((method) => (
            <span key={method} className="toggle">
              <input
                id={`cors-${method}`}
                type="checkbox"
                checked={methods.includes(method)}
                onChange={(event) =>
                  setMethods((current) =>
                    event.target.checked ? [...current, method] : current.filter((item) => item !== method),
                  )
                }
              />
              <label htmlFor={`cors-${method}`}>{method}</label>
            </span>
          ))}
        </div>
      </fieldset>
      <Field
        label="Allowed headers"
        operation="replaceCorsSettings"
        name="headers"
        error={save.error}
        hint="Separated by commas; Authorization, Content-Type, X-Workspace-ID, X-API-Key and Last-Event-ID are always allowed"
      >
        {(props) => <input {...props} value={headers} onChange={(event) => setHeaders(event.target.value)} />}
      </Field>
      <Field
        label="Exposed headers"
        operation="replaceCorsSettings"
        name="exposed_headers"
        error={save.error}
      >
        {(props) => <input {...props} value={exposed} onChange={(event) => setExposed(event.target.value)} />}
      </Field>
      <div className="row">
        <div className="field toggle">
          <input
            id="cors-credentials"
            type="checkbox"
            role="switch"
            aria-checked={credentials}
            checked={credentials}
            onChange={(event) => setCredentials(event.target.checked)}
          />
          <label htmlFor="cors-credentials">Allow credentials</label>
        </div>
        <Field label="Max age (seconds)" operation="replaceCorsSettings" name="max_age" error={save.error}>
          {(props) => (
            <input
              {...props}
              type="number"
              value={maxAge}
              onChange={(event) => setMaxAge(event.target.value)}
            />
          )}
        </Field>
      </div>
      <button type="submit" className="primary" disabled={save.isPending}>
        Save CORS policy
      </button>
    </form>
  );
}

function CorsView({ cors }: { cors: Cors }) {
  return (
    <div className="card narrow">
      <dl className="facts">
        <dt>Allowed origins</dt>
        <dd>{cors.origins.length ? cors.origins.join(', ') : 'none'}</dd>
        <dt>Methods</dt>
        <dd>{cors.methods.join(', ')}</dd>
        <dt>Allowed headers</dt>
        <dd>{cors.headers.join(', ') || '—'}</dd>
        <dt>Exposed headers</dt>
        <dd>{cors.exposed_headers.join(', ') || '—'}</dd>
        <dt>Credentials</dt>
        <dd>{cors.credentials ? 'allowed' : 'not allowed'}</dd>
        <dt>Max age</dt>
        <dd>{cors.max_age} s</dd>
        <dt>Changed</dt>
        <dd>{cors.updated_at ? `${formatTime(cors.updated_at)} by ${cors.updated_by ?? '—'}` : 'never'}</dd>
      </dl>
    </div>
  );
}
