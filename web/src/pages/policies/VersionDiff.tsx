import { useState } from 'react';
import { lineDiff } from '../../lib/line-diff.ts';
import { Empty, Loading, ProblemAlert } from '../../ui/states.tsx';
import { usePolicy } from './policy-query.ts';

/** Two versions' content side by side, line by line: what was removed on the left, added on the right. */
export function VersionDiff({ id, versions }: { id: string; versions: number[] }) {
  // versions: newest first.
  const [left, setLeft] = useState(versions[1] ?? versions[0] ?? 1);
  const [right, setRight] = useState(versions[0] ?? 1);
  const before = usePolicy(id, left);
  const after = usePolicy(id, right);
  const rows =
    before.data && after.data
      ? lineDiff(JSON.stringify(before.data.content, null, 2), JSON.stringify(after.data.content, null, 2))
      : undefined;
  const changes = rows?.filter((row) => row.kind !== 'same').length ?? 0;
  const pick = (label: string, htmlId: string, value: number, set: (n: number) => void) => (
    <div className="field">
      <label htmlFor={htmlId}>{label}</label>
      <select id={htmlId} value={value} onChange={(event) => set(Number(event.target.value))}>
        {versions.map((version) => (
          <option key={version} value={version}>
            Version {version}
          </option>
        ))}
      </select>
    </div>
  );
  return (
    <section className="card" aria-labelledby="policy-diff">
      <h2 id="policy-diff">Compare versions</h2>
      {versions.length < 2 ? (
        <Empty>Only one version: write another to compare them.</Empty>
      ) : (
        <>
          <div className="row">
            {pick('Compare version', 'diff-left', left, setLeft)}
            {pick('With version', 'diff-right', right, setRight)}
          </div>
          <ProblemAlert error={before.error ?? after.error} />
          {(before.isPending || after.isPending) && <Loading what="both versions" />}
          {rows && (
            <>
              <p className="muted" role="status">
                {changes === 0
                  ? 'The two versions have the same content.'
                  : changes === 1
                    ? '1 line differs.'
                    : `${changes} lines differ.`}
              </p>
              <div className="table-wrap">
                <table className="diff">
                  <caption className="visually-hidden">
                    Differences between version {left} and version {right}
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">
                        <span className="visually-hidden">Line of version {left}</span>
                      </th>
                      <th scope="col">Version {left}</th>
                      <th scope="col">
                        <span className="visually-hidden">Line of version {right}</span>
                      </th>
                      <th scope="col">Version {right}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((row, index) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: diff rows have no identity but their place
                      <tr key={index} className={`diff-${row.kind}`}>
                        <td className="line-number">{row.leftNumber ?? ''}</td>
                        <td className={row.kind === 'same' || row.left === undefined ? '' : 'diff-old'}>
                          {row.left !== undefined && row.kind !== 'same' && (
                            <span className="visually-hidden">removed: </span>
                          )}
                          <code>{row.left ?? ''}</code>
                        </td>
                        <td className="line-number">{row.rightNumber ?? ''}</td>
                        <td className={row.kind === 'same' || row.right === undefined ? '' : 'diff-new'}>
                          {row.right !== undefined && row.kind !== 'same' && (
                            <span className="visually-hidden">added: </span>
                          )}
                          <code>{row.right ?? ''}</code>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </>
      )}
    </section>
  );
}
