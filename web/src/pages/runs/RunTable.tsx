import { Link } from 'react-router';
import type { Schemas } from '../../api/client.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatCost, formatDuration, formatTime } from '../../ui/format.ts';

/** Runs as a table: each links to its live page. */
export function RunTable({ runs, caption }: { runs: Schemas['Run'][]; caption: string }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
            <th scope="col">Tokens</th>
            <th scope="col">Cost</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id}>
              <td>
                <Link to={`/runs/${run.id}`}>{run.workflow_name}</Link>
                <div className="muted">{run.id.slice(0, 8)}</div>
              </td>
              <td>
                <Badge value={run.status} />
              </td>
              <td>{formatTime(run.started_at ?? run.created_at)}</td>
              <td>{formatDuration(run.duration_ms)}</td>
              <td>{run.tokens_in + run.tokens_out}</td>
              <td>{formatCost(run.cost)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
