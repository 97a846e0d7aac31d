import { describe, expect, it } from 'vitest';
import { defaultHosts } from './credential-hosts.ts';

describe('defaultHosts', () => {
  const secret = new Set(['api_key']);
  const endpoint = { kind: 'http' as const, url: '{{test_url}}' };

  it('is the host of the filled test endpoint', () => {
    expect(defaultHosts(endpoint, { test_url: 'http://127.0.0.1:5000/probe' }, secret)).toEqual([
      '127.0.0.1:5000',
    ]);
    expect(
      defaultHosts(
        { kind: 'http', url: '{{base_url}}/models' },
        { base_url: 'https://api.openai.com/v1' },
        secret,
      ),
    ).toEqual(['api.openai.com']);
  });

  it('is empty without an HTTP endpoint, with a missing field, or with a host made of a secret', () => {
    expect(defaultHosts({ kind: 'postgres' }, { host: 'db' }, secret)).toEqual([]);
    expect(defaultHosts(endpoint, {}, secret)).toEqual([]);
    expect(
      defaultHosts({ kind: 'http', url: 'https://{{api_key}}.example.com/' }, { api_key: 'k' }, secret),
    ).toEqual([]);
    expect(defaultHosts(endpoint, { test_url: 'ftp://files.example.com/' }, secret)).toEqual([]);
  });
});
