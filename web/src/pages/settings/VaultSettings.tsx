import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

type Vault = {
  environment_lookup: boolean;
  archive_audit_on_delete: boolean;
  refuse_private_networks: boolean;
};
type Key = keyof Vault;

const SWITCHES: { key: Key; label: string; hint: string }[] = [
  {
    key: 'environment_lookup',
    label: 'Look credentials up by environment',
    hint: 'A credential named by tools resolves to the one of the caller’s environment.',
  },
  {
    key: 'archive_audit_on_delete',
    label: 'Archive the audit trail of deleted credentials',
    hint: 'Kept in the audit archive after a credential is deleted.',
  },
  {
    key: 'refuse_private_networks',
    label: 'Refuse private networks',
    hint: 'Connection tests and tools may not reach private addresses (turning it off needs the platform to allow it).',
  },
];

export function VaultSettings() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: ['vault-settings'],
    queryFn: () => unwrap(api.GET('/api/credentials/settings')),
  });
  const save = useMutation({
    mutationFn: (change: Partial<Vault>) => unwrap(api.PUT('/api/credentials/settings', { body: change })),
    onSuccess: (saved) => queryClient.setQueryData(['vault-settings'], saved),
  });
  const admin = can('admin');
  return (
    <section aria-labelledby="vault-heading">
      <h2 id="vault-heading">Vault</h2>
      {!admin && <ReadOnly needs="the admin role" />}
      <ProblemAlert error={settings.error} />
      <ProblemAlert error={save.error} title="The vault settings were not saved" />
      {settings.isPending && <Loading what="the vault settings" />}
      {settings.data && (
        <div className="card narrow">
          {SWITCHES.map((item) => (
            <div className="field" key={item.key}>
              <div className="toggle">
                <input
                  id={`vault-${item.key}`}
                  type="checkbox"
                  role="switch"
                  aria-checked={settings.data[item.key]}
                  checked={settings.data[item.key]}
                  disabled={!admin || save.isPending}
                  aria-describedby={`vault-${item.key}-hint`}
                  onChange={(event) => save.mutate({ [item.key]: event.target.checked })}
                />
                <label htmlFor={`vault-${item.key}`}>{item.label}</label>
              </div>
              <div className="hint" id={`vault-${item.key}-hint`}>
                {item.hint}
              </div>
            </div>
          ))}
        </div>
      )}
    </section>
  );
}
