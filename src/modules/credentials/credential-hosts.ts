import type { TestEndpoint } from '../../db/schema/credentials.ts';
import { destinationOf } from '../../lib/net/allowed-hosts.ts';
import { fillPlaceholders } from '../../lib/placeholders.ts';

/**
 * The destination a credential belongs to by default: the host of its type's HTTP test
 * endpoint, filled from the credential's non-secret fields (`{{base_url}}/models`,
 * `{{test_url}}`). None when the type has no HTTP test endpoint or its host comes from a
 * secret or missing field. Moving that endpoint is rule C3a's business (admins, or the
 * secret supplied again), so the default follows only a move its owner could make.
 */
export function defaultHosts(
  endpoint: TestEndpoint | null | undefined,
  data: Record<string, unknown>,
  secretFields: ReadonlySet<string>,
): string[] {
  if (endpoint?.kind !== 'http' || !endpoint.url) return [];
  let missing = false;
  const filled = fillPlaceholders(endpoint.url, (field, offset) => {
    const value = data[field];
    if (secretFields.has(field) || value === undefined || value === null || typeof value === 'object') {
      missing = true;
      return '';
    }
    return offset === 0 ? String(value) : encodeURIComponent(String(value));
  });
  if (missing) return [];
  try {
    const url = new URL(filled);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return [];
    return [destinationOf(url)];
  } catch {
    return [];
  }
}
