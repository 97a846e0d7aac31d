/** Previous/next over a list the API pages with limit, offset and total. */
export function Pager({
  offset,
  limit,
  total,
  onChange,
  label,
}: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
  label: string;
}) {
  if (total <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, total);
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <span className="muted">
        {total === 0 ? 0 : offset + 1}–{last} of {total}
      </span>
      <button type="button" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - limit))}>
        Previous page
      </button>
      <button type="button" disabled={last >= total} onClick={() => onChange(offset + limit)}>
        Next page
      </button>
    </nav>
  );
}
