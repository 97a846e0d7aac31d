import { NavLink, useParams } from 'react-router';
import NotFound from '../NotFound.tsx';
import { CodeTab } from './CodeTab.tsx';
import { DocumentsTab } from './DocumentsTab.tsx';
import { SearchTab } from './SearchTab.tsx';
import { SourcesTab } from './SourcesTab.tsx';

const TABS = [
  { to: '/knowledge', label: 'Sources', tab: undefined },
  { to: '/knowledge/documents', label: 'Documents', tab: 'documents' },
  { to: '/knowledge/search', label: 'Search', tab: 'search' },
  { to: '/knowledge/code', label: 'Code', tab: 'code' },
] as const;

/** Knowledge: sources, their documents (uploads included), searching them, and code graphs. */
export default function KnowledgePage() {
  const { tab } = useParams();
  const current = TABS.find((item) => item.tab === tab);
  if (!current) return <NotFound />;
  return (
    <>
      <h1>Knowledge</h1>
      <nav aria-label="Knowledge" className="subnav">
        <ul>
          {TABS.map((item) => (
            <li key={item.to}>
              <NavLink to={item.to} end>
                {item.label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      {tab === undefined && <SourcesTab />}
      {tab === 'documents' && <DocumentsTab />}
      {tab === 'search' && <SearchTab />}
      {tab === 'code' && <CodeTab />}
    </>
  );
}
