/**
 * Where a secret may be sent (the vault's rule C3b, docs/vault.md): a list of destinations
 * `host[:port]`, compared after the WHATWG URL parser has put both sides in one canonical form.
 *
 *   entry                 matches                                   does not match
 *   api.example.com       https://api.example.com/… (port 443)      http://api.example.com/, :8443
 *   api.example.com:8443  http(s)://api.example.com:8443/…          https://api.example.com/
 *   *.example.com         https://a.example.com/, a.b.example.com   https://example.com/
 *   127.0.0.1:8080        http://127.0.0.1:8080/ (and 0x7f.1:8080)  http://localhost:8080/
 *
 * - An entry without a port means HTTPS on its default port only: a key never travels in clear
 *   text to a host an admin named without saying so.
 * - Case and one trailing dot do not count (`API.Example.COM.` is `api.example.com`); IP
 *   literals are canonical (`0x7f.1` is `127.0.0.1`, `[0:0::1]` is `[::1]`), but an IP literal
 *   and a name are different destinations even when the name resolves to that address.
 * - Userinfo, paths, queries and anything else than a host and a port make an entry invalid.
 */

/** The canonical form of one allowed-hosts entry, or undefined when it is not `[*.]host[:port]`. */
export function normalizeHostEntry(entry: string): string | undefined {
  const text = entry.trim();
  const wildcard = text.startsWith('*.');
  const rest = wildcard ? text.slice(2) : text;
  if (rest === '' || /[/?#@\\\s*]/.test(rest)) return undefined;
  let url: URL;
  try {
    url = new URL(`https://${rest}`);
  } catch {
    return undefined;
  }
  const host = stripDot(url.hostname);
  if (host === '' || (wildcard && (host.startsWith('[') || /^[\d.]+$/.test(host)))) return undefined;
  return `${wildcard ? '*.' : ''}${host}${url.port === '' ? '' : `:${url.port}`}`;
}

/**
 * The destination of a URL in the entries' form: the host alone for HTTPS on port 443,
 * `host:port` otherwise (`http://example.com/` is `example.com:80`).
 */
export function destinationOf(url: URL): string {
  const host = stripDot(url.hostname.toLowerCase());
  if (url.protocol === 'https:' && url.port === '') return host;
  return `${host}:${url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port}`;
}

/** True when `destination` (from `destinationOf`) is one of the canonical `entries`. */
export function destinationAllowed(destination: string, entries: readonly string[]): boolean {
  const [host, port] = splitPort(destination);
  return entries.some((entry) => {
    const [pattern, wanted] = splitPort(entry);
    if (port !== wanted) return false;
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
  });
}

const stripDot = (host: string) => (host.endsWith('.') ? host.slice(0, -1) : host);

/** `host:port` -> [host, port]; no port means HTTPS's 443. IPv6 literals keep their brackets. */
function splitPort(destination: string): [string, string] {
  const match = /^(.*?)(?::(\d+))?$/.exec(destination) as RegExpExecArray;
  return [match[1] as string, match[2] ?? '443'];
}
