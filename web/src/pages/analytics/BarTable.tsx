import { formatCost, formatNumber } from '../../ui/format.ts';

export interface BarRow {
  key: string;
  label: string;
  cost: number;
  input_tokens: number;
  output_tokens: number;
  count: number;
}

/**
 * A breakdown as a table a person reads at a glance: each row's share drawn as a bar (its
 * width, relative to the largest), and the numbers in cells beside it.
 */
export function BarTable({ title, rows, countLabel }: { title: string; rows: BarRow[]; countLabel: string }) {
  const max = Math.max(0, ...rows.map((row) => row.cost));
  const total = rows.reduce((sum, row) => sum + row.cost, 0);
  return (
    <section className="card" aria-label={title}>
      <h3>{title}</h3>
      {rows.length === 0 ? (
        <p className="muted">Nothing in this range.</p>
      ) : (
        <div className="table-wrap">
          <table className="bars">
            <caption className="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Cost</th>
                <th scope="col">Share</th>
                <th scope="col">Tokens in / out</th>
                <th scope="col">{countLabel}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.key}>
                  <th scope="row">{row.label}</th>
                  <td className="bar-cell">
                    <span className="bar" aria-hidden="true">
                      <span style={{ width: `${max > 0 ? (row.cost / max) * 100 : 0}%` }} />
                    </span>
                    {formatCost(row.cost)}
                  </td>
                  <td>{total > 0 ? `${((row.cost / total) * 100).toFixed(0)} %` : '—'}</td>
                  <td>
                    {formatNumber(row.input_tokens)} / {formatNumber(row.output_tokens)}
                  </td>
                  <td>{formatNumber(row.count)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
