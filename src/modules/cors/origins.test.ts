import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { originAllowed, originProblem, REQUIRED_HEADERS, withRequiredHeaders } from './origins.ts';

describe('CORS origin entries', () => {
  it('accepts exact origins, subdomain patterns and *', () => {
    for (const entry of [
      '*',
      'https://app.example.com',
      'http://localhost:5173',
      'https://app.example.com:8443',
      'http://[::1]:3000',
      'https://*.example.com',
    ]) {
      expect(originProblem(entry), entry).toBeUndefined();
    }
  });

  it('refuses what is not an origin', () => {
    for (const entry of [
      'app.example.com',
      'https://app.example.com/',
      'https://app.example.com/path',
      'https://App.example.com',
      'ftp://example.com',
      'https://*.com',
      'https://a.*.example.com',
      'https://example.com:0',
      'https://example.com:65536',
      'https://user@example.com',
      '',
    ]) {
      expect(originProblem(entry), entry).toBeDefined();
    }
  });

  it('matches exact entries exactly and patterns on subdomains only', () => {
    const entries = ['https://app.example.com', 'https://*.partner.example:8443'];
    expect(originAllowed(entries, 'https://app.example.com')).toBe(true);
    expect(originAllowed(entries, 'http://app.example.com')).toBe(false);
    expect(originAllowed(entries, 'https://app.example.com:443')).toBe(false);
    expect(originAllowed(entries, 'https://a.partner.example:8443')).toBe(true);
    expect(originAllowed(entries, 'https://a.b.partner.example:8443')).toBe(true);
    expect(originAllowed(entries, 'https://partner.example:8443')).toBe(false);
    expect(originAllowed(entries, 'https://a.partner.example')).toBe(false);
    expect(originAllowed(entries, 'https://evilpartner.example:8443')).toBe(false);
    expect(originAllowed(entries, 'https://x.partner.example:8443.evil.com')).toBe(false);
    expect(originAllowed(['*'], 'https://anything.example')).toBe(true);
    expect(originAllowed([], 'https://app.example.com')).toBe(false);
  });

  it('never admits an origin outside a pattern’s domain (property)', () => {
    const label = fc.stringMatching(/^[a-z0-9]{1,10}$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 3 }), label, (sub, other) => {
        const origin = `https://${sub.join('.')}.${other}x.example`;
        expect(originAllowed(['https://*.example.org'], origin)).toBe(false);
        expect(originAllowed([`https://*.${other}x.example`], origin)).toBe(true);
      }),
    );
  });

  it('always includes the required headers once, whatever the case', () => {
    expect(withRequiredHeaders(['authorization', 'X-Trace'])).toEqual([...REQUIRED_HEADERS, 'X-Trace']);
  });
});
