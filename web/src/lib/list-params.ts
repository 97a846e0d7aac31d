import { useSearchParams } from 'react-router';

export const PAGE_SIZE = 20;

/**
 * A list's search and page, kept in the address (`?q=…&offset=…`), so a filtered page can be
 * reloaded, shared and navigated back to.
 */
export function useListParams<K extends string>(filters: readonly K[] = []) {
  const [params, setParams] = useSearchParams();
  const offset = Math.max(0, Number(params.get('offset') ?? 0) || 0);
  const q = params.get('q') ?? '';
  const values = Object.fromEntries(filters.map((name) => [name, params.get(name) ?? ''])) as Record<
    K,
    string
  >;
  const update = (changes: Record<string, string | number | undefined>) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        for (const [name, value] of Object.entries(changes)) {
          if (value === undefined || value === '' || value === 0) next.delete(name);
          else next.set(name, String(value));
        }
        // A new search or filter starts at its first page.
        if (!('offset' in changes)) next.delete('offset');
        return next;
      },
      { replace: true },
    );
  return {
    q,
    offset,
    limit: PAGE_SIZE,
    filters: values,
    setQ: (value: string) => update({ q: value }),
    setOffset: (value: number) => update({ offset: value }),
    setFilter: (name: K, value: string) => update({ [name]: value }),
  };
}
