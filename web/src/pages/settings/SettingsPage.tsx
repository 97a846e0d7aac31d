import { Link, useParams } from 'react-router';
import NotFound from '../NotFound.tsx';
import { ApiKeysSettings } from './ApiKeysSettings.tsx';
import { AuditSettings } from './AuditSettings.tsx';
import { CorsSettings } from './CorsSettings.tsx';
import { FlagsSettings } from './FlagsSettings.tsx';
import { MembersSettings } from './MembersSettings.tsx';
import { ProvidersSettings } from './ProvidersSettings.tsx';
import { TenantsSettings } from './TenantsSettings.tsx';
import { VaultSettings } from './VaultSettings.tsx';

const SECTIONS = [
  { path: 'providers', label: 'Providers', Component: ProvidersSettings },
  { path: 'flags', label: 'Feature flags', Component: FlagsSettings },
  { path: 'members', label: 'Members', Component: MembersSettings },
  { path: 'api-keys', label: 'API keys', Component: ApiKeysSettings },
  { path: 'vault', label: 'Vault', Component: VaultSettings },
  { path: 'tenants', label: 'Tenants', Component: TenantsSettings },
  { path: 'cors', label: 'CORS', Component: CorsSettings },
  { path: 'audit', label: 'Audit', Component: AuditSettings },
] as const;

/** `/settings/<section>`: the workspace's and the platform's settings, one section at a time. */
export default function SettingsPage() {
  const { section = 'providers' } = useParams();
  const current = SECTIONS.find((item) => item.path === section);
  if (!current) return <NotFound />;
  const { Component } = current;
  return (
    <>
      <h1>Settings</h1>
      <nav aria-label="Settings" className="subnav">
        <ul>
          {SECTIONS.map((item) => (
            <li key={item.path}>
              <Link
                to={`/settings/${item.path}`}
                aria-current={item.path === current.path ? 'page' : undefined}
              >
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <Component />
    </>
  );
}
