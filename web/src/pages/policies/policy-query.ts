import { useQuery } from '@tanstack/react-query';
import { api, type Schemas, unwrap } from '../../api/client.ts';

export type Policy = Schemas['Policy'];
export type PolicyContent = Policy['content'];

/** Reads a policy at a version (or production, else latest), as the API shows it. */
export const usePolicy = (id: string, version?: number) =>
  useQuery({
    queryKey: ['policy', id, version ?? 'current'],
    queryFn: () =>
      unwrap(
        api.GET('/api/policy/{policy_id}', {
          params: { path: { policy_id: id }, query: version ? { version } : {} },
        }),
      ),
    retry: false,
  });
