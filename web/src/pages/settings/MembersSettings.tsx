import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { ConfirmButton } from '../../ui/ConfirmButton.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/format.ts';
import { Pager } from '../../ui/Pager.tsx';
import { Loading, ProblemAlert } from '../../ui/states.tsx';
import { ReadOnly } from './ReadOnly.tsx';

type Role = Schemas['Member']['role'];
const ROLES: Role[] = ['viewer', 'member', 'admin', 'owner'];
const PAGE = 20;

export function MembersSettings() {
  const { can } = useWorkspace();
  const queryClient = useQueryClient();
  const [offset, setOffset] = useState(0);
  const members = useQuery({
    queryKey: ['members', offset],
    queryFn: () => unwrap(api.GET('/api/workspaces/members', { params: { query: { limit: PAGE, offset } } })),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['members'] });
  const change = useMutation({
    mutationFn: ({ user, role }: { user: string; role: Role }) =>
      unwrap(
        api.PUT('/api/workspaces/members/{user_id}', { params: { path: { user_id: user } }, body: { role } }),
      ),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: (user: string) =>
      unwrap(api.DELETE('/api/workspaces/members/{user_id}', { params: { path: { user_id: user } } })),
    onSettled: refresh,
  });
  const admin = can('admin');
  // Only owners grant or take away the owner role.
  const assignable = ROLES.filter((role) => role !== 'owner' || can('owner'));

  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      {!admin && <ReadOnly needs="the admin role" />}
      <ProblemAlert error={members.error} />
      <ProblemAlert error={change.error} title="The role was not changed" />
      <ProblemAlert error={remove.error} title="The member was not removed" />
      {members.isPending && <Loading what="members" />}
      {members.data && (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Members</caption>
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Role</th>
                <th scope="col">Member since</th>
                {admin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {members.data.items.map((member) => {
                const editable = admin && (member.role !== 'owner' || can('owner'));
                return (
                  <tr key={member.user_id}>
                    <th scope="row">{member.user_id}</th>
                    <td>
                      {editable ? (
                        <>
                          <label htmlFor={`role-${member.user_id}`} className="visually-hidden">
                            Role of {member.user_id}
                          </label>
                          <select
                            id={`role-${member.user_id}`}
                            value={member.role}
                            disabled={change.isPending}
                            onChange={(event) =>
                              change.mutate({ user: member.user_id, role: event.target.value as Role })
                            }
                          >
                            {assignable.map((role) => (
                              <option key={role}>{role}</option>
                            ))}
                          </select>
                        </>
                      ) : (
                        member.role
                      )}
                    </td>
                    <td>{formatTime(member.created_at)}</td>
                    {admin && (
                      <td>
                        {editable && (
                          <ConfirmButton
                            label={`Remove ${member.user_id}`}
                            question={`Remove ${member.user_id} from the workspace?`}
                            confirmLabel="Yes, remove"
                            onConfirm={() => remove.mutate(member.user_id)}
                            disabled={remove.isPending}
                          />
                        )}
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {members.data && (
        <Pager label="Members" offset={offset} limit={PAGE} total={members.data.total} onChange={setOffset} />
      )}
      {admin && <AddMember roles={assignable} />}
    </section>
  );
}

function AddMember({ roles }: { roles: Role[] }) {
  const queryClient = useQueryClient();
  const [user, setUser] = useState('');
  const [role, setRole] = useState<Role>('member');
  const add = useMutation({
    mutationFn: () => unwrap(api.POST('/api/workspaces/members', { body: { user_id: user.trim(), role } })),
    onSuccess: () => {
      setUser('');
      void queryClient.invalidateQueries({ queryKey: ['members'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  return (
    <form className="card narrow" onSubmit={submit} aria-labelledby="add-member">
      <h3 id="add-member">Add a member</h3>
      <ProblemAlert error={add.error} title="The member was not added" />
      <div className="row">
        <Field
          label="User id"
          operation="addMember"
          name="user_id"
          error={add.error}
          hint="The subject (sub) of their sign-in"
        >
          {(props) => <input {...props} value={user} onChange={(event) => setUser(event.target.value)} />}
        </Field>
        <Field label="Role" operation="addMember" name="role" error={add.error}>
          {(props) => (
            <select {...props} value={role} onChange={(event) => setRole(event.target.value as Role)}>
              {roles.map((value) => (
                <option key={value}>{value}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <button type="submit" className="primary" disabled={add.isPending}>
        Add member
      </button>
    </form>
  );
}
