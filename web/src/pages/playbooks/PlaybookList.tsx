import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../../api/client.ts';
import { useWorkspace } from '../../app/workspace.tsx';
import { useListParams } from '../../lib/list-params.ts';
import { Badge } from '../../ui/Badge.tsx';
import { formatCost, formatDuration, formatPercent } from '../../ui/format.ts';
import { FilterSelect } from '../../ui/ListFilters.tsx';
import { Pager } from '../../ui/Pager.tsx';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { MineForm } from './MineForm.tsx';
import { BAND_WORDS, CATEGORIES, type Category, ConfidenceBadge } from './playbook-parts.tsx';

const BANDS = ['high', 'medium', 'low'] as const;

/** `/playbooks`: mine, and the mined playbooks best quality first, filtered by band and category. */
export default function PlaybookList() {
  const { can } = useWorkspace();
  const list = useListParams(['confidence', 'category', 'archived']);
  const band = list.filters.confidence as (typeof BANDS)[number] | '';
  const category = list.filters.category as Category | '';
  const archived = list.filters.archived === 'true';
  const playbooks = useQuery({
    queryKey: ['playbooks', band, category, archived, list.offset],
    queryFn: () =>
      unwrap(
        api.GET('/api/playbooks', {
          params: {
            query: {
              limit: list.limit,
              offset: list.offset,
              include_archived: archived,
              ...(band ? { confidence: band } : {}),
              ...(category ? { category } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });

  return (
    <>
      <h1>Playbooks</h1>
      <p className="muted">
        Patterns of agents, tools and context that succeed together, mined from this workspace's finished
        runs.
      </p>
      {can('member') ? (
        <MineForm />
      ) : (
        <p className="alert info">You can read playbooks; mining and promoting them needs the member role.</p>
      )}
      <section aria-labelledby="playbook-list">
        <h2 id="playbook-list">Mined playbooks</h2>
        <div className="row">
          <FilterSelect
            label="Confidence"
            value={band}
            onChange={(value) => list.setFilter('confidence', value)}
          >
            {BANDS.map((value) => (
              <option key={value} value={value}>
                {BAND_WORDS[value]}
              </option>
            ))}
          </FilterSelect>
          <FilterSelect
            label="Category"
            value={category}
            onChange={(value) => list.setFilter('category', value)}
          >
            {CATEGORIES.map((value) => (
              <option key={value}>{value}</option>
            ))}
          </FilterSelect>
          <div className="field checkbox-field">
            <input
              id="playbook-archived"
              type="checkbox"
              checked={archived}
              onChange={(event) => list.setFilter('archived', event.target.checked ? 'true' : '')}
            />
            <label htmlFor="playbook-archived">Show archived</label>
          </div>
        </div>
        <ProblemAlert error={playbooks.error} />
        {playbooks.isPending && <Loading what="playbooks" />}
        {playbooks.data && playbooks.data.total === 0 && (
          <Empty>
            {band || category
              ? 'No playbook matches.'
              : 'No playbooks yet. Mine them from finished runs: a pattern needs at least the minimum support of successful runs.'}
          </Empty>
        )}
        {playbooks.data && playbooks.data.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Playbooks</caption>
              <thead>
                <tr>
                  <th scope="col">Playbook</th>
                  <th scope="col">Category</th>
                  <th scope="col">Confidence</th>
                  <th scope="col">Support</th>
                  <th scope="col">Success rate</th>
                  <th scope="col">Avg duration</th>
                  <th scope="col">Avg cost</th>
                  <th scope="col">Quality</th>
                </tr>
              </thead>
              <tbody>
                {playbooks.data.items.map((playbook) => (
                  <tr key={playbook.id}>
                    <td>
                      <Link to={`/playbooks/${playbook.id}`}>{playbook.name}</Link>
                      {playbook.archived && (
                        <>
                          {' '}
                          <Badge value="archived" tone="neutral" />
                        </>
                      )}
                    </td>
                    <td>{playbook.category ? <Badge value={playbook.category} tone="info" /> : '—'}</td>
                    <td>
                      <ConfidenceBadge playbook={playbook} />
                    </td>
                    <td>
                      {playbook.support} of {playbook.matching_runs}
                    </td>
                    <td>{formatPercent(playbook.success_rate)}</td>
                    <td>{formatDuration(playbook.avg_duration_ms)}</td>
                    <td>{formatCost(playbook.avg_cost)}</td>
                    <td>{formatPercent(playbook.quality_score, 0)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {playbooks.data && (
          <Pager
            label="Playbooks"
            offset={list.offset}
            limit={list.limit}
            total={playbooks.data.total}
            onChange={list.setOffset}
          />
        )}
      </section>
    </>
  );
}
