import { useQuery } from '@tanstack/react-query';
import { api, type Schemas, unwrap } from '../../api/client.ts';

export type CredentialType = Schemas['CredentialType'];

export const CATEGORY_LABELS: Record<string, string> = {
  database: 'Databases',
  ai: 'AI providers',
  api: 'APIs',
  infrastructure: 'Infrastructure',
};

/** The credential types the workspace sees (system and its own), active ones only. */
export const useCredentialTypes = () =>
  useQuery({
    queryKey: ['credential-types'],
    queryFn: () => unwrap(api.GET('/api/credentials/types', { params: { query: { is_active: true } } })),
    staleTime: 60_000,
  });

/** Types grouped by category, in a stable order (known categories first). */
export function byCategory(types: CredentialType[]): [string, CredentialType[]][] {
  const groups = new Map<string, CredentialType[]>();
  for (const type of types) groups.set(type.category, [...(groups.get(type.category) ?? []), type]);
  const order = Object.keys(CATEGORY_LABELS);
  return [...groups.entries()].sort(
    ([a], [b]) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b),
  );
}

export const categoryLabel = (category: string) => CATEGORY_LABELS[category] ?? category;
