import { describe, expect, it } from 'vitest';
import { destinationAllowed, destinationOf, normalizeHostEntry } from './allowed-hosts.ts';

describe('normalizeHostEntry', () => {
  it('puts every spelling of a host in one canonical form', () => {
    expect(normalizeHostEntry('API.Example.COM.')).toBe('api.example.com');
    expect(normalizeHostEntry(' *.Example.org ')).toBe('*.example.org');
    expect(normalizeHostEntry('api.example.com:443')).toBe('api.example.com');
    expect(normalizeHostEntry('api.example.com:8443')).toBe('api.example.com:8443');
    expect(normalizeHostEntry('0x7f.1:8080')).toBe('127.0.0.1:8080');
    expect(normalizeHostEntry('[0:0::1]:9000')).toBe('[::1]:9000');
  });

  it('refuses anything but a host and a port', () => {
    for (const entry of [
      '',
      '*',
      '*.',
      'user@host.example',
      'host.example/path',
      'host.example?x',
      'two words',
      '*.10.0.0.1',
      '*.[::1]',
      'host.example:99999',
      'a*.example.com',
    ]) {
      expect(normalizeHostEntry(entry), entry).toBeUndefined();
    }
  });
});

describe('destinationOf and destinationAllowed', () => {
  const allowed = ['api.example.com', '*.example.org', '127.0.0.1:8080', '[::1]:9000'];
  const at = (url: string) => destinationAllowed(destinationOf(new URL(url)), allowed);

  it('lets through the listed destinations, however the URL spells them', () => {
    expect(at('https://API.example.com./v1')).toBe(true);
    expect(at('https://api.example.com:443/v1')).toBe(true);
    expect(at('https://a.b.example.org/')).toBe(true);
    expect(at('http://127.0.0.1:8080/x')).toBe(true);
    expect(at('http://0x7f000001:8080/x')).toBe(true);
    expect(at('http://[0::1]:9000/')).toBe(true);
  });

  it('refuses other ports, schemes, names for addresses and look-alike hosts', () => {
    expect(at('http://api.example.com/v1')).toBe(false); // clear text on port 80
    expect(at('https://api.example.com:8443/v1')).toBe(false);
    expect(at('https://example.org/')).toBe(false); // the wildcard covers subdomains only
    expect(at('https://api.example.com.evil.net/')).toBe(false);
    expect(at('https://evilexample.org/')).toBe(false);
    expect(at('http://localhost:8080/')).toBe(false); // a name is not the IP literal
    expect(at('http://127.0.0.1:8081/')).toBe(false);
    expect(at('http://[::1]:9001/')).toBe(false);
  });
});
