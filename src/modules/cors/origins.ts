/**
 * The CORS settings' rules, free of HTTP and database: which origin entries are valid, which
 * request origin an entry admits, and the headers every policy allows.
 *
 *   entry                          admits
 *   https://app.example.com        exactly that origin (scheme, host and port)
 *   http://localhost:5173          exactly that origin (a development server)
 *   https://*.example.com          https://a.example.com, https://a.b.example.com (not the apex)
 *   *                              any origin, only when credentials is false
 */

/**
 * Sent by every client of this API, so always allowed whatever the settings say: the
 * dashboard's 401 came from a preflight that did not allow `Authorization` (spec section 5).
 */
export const REQUIRED_HEADERS = [
  'Authorization',
  'Content-Type',
  'X-Workspace-ID',
  'X-API-Key',
  'Last-Event-ID',
] as const;

export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type CorsMethod = (typeof CORS_METHODS)[number];

/** A header field name (RFC 9110 token). */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$";

const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const EXACT = new RegExp(
  `^(https?)://(${HOST_LABEL}(?:\\.${HOST_LABEL})*|\\[[0-9a-f:.]+\\])(?::(\\d{1,5}))?$`,
);
const PATTERN = new RegExp(`^(https?)://\\*\\.(${HOST_LABEL}(?:\\.${HOST_LABEL})+)(?::(\\d{1,5}))?$`);

/** Why an origin entry is not valid, or undefined when it is. */
export function originProblem(entry: string): string | undefined {
  if (entry === '*') return undefined;
  const match = EXACT.exec(entry) ?? PATTERN.exec(entry);
  if (!match) {
    return entry.endsWith('/')
      ? 'must not end with a slash: an origin has no path'
      : 'must be an origin such as https://app.example.com[:port] (lower case, no path), a pattern https://*.example.com, or *';
  }
  const port = match[3];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65_535 || port.startsWith('0'))) {
    return 'has a port outside 1..65535';
  }
  return undefined;
}

/** True when `origin` (the request's `Origin` header) is admitted by one of `entries`. */
export function originAllowed(entries: readonly string[], origin: string): boolean {
  return entries.some((entry) => {
    if (entry === '*' || entry === origin) return true;
    const pattern = PATTERN.exec(entry);
    if (!pattern) return false;
    const [, scheme, domain, port] = pattern;
    const suffix = `.${domain}${port === undefined ? '' : `:${port}`}`;
    if (!origin.startsWith(`${scheme}://`) || !origin.endsWith(suffix)) return false;
    const sub = origin.slice(`${scheme}://`.length, -suffix.length);
    return new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*$`).test(sub);
  });
}

/** `headers` with the required ones added (case-insensitively unique, required first). */
export function withRequiredHeaders(headers: readonly string[]): string[] {
  const seen = new Set<string>();
  const result: string[] = [];
  for (const header of [...REQUIRED_HEADERS, ...headers]) {
    if (seen.has(header.toLowerCase())) continue;
    seen.add(header.toLowerCase());
    result.push(header);
  }
  return result;
}
