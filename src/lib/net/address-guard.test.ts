import { describe, expect, it } from 'vitest';
import { checkAddress, vetHost } from './address-guard.ts';

const open = { refusePrivateNetworks: false };
const strict = { refusePrivateNetworks: true };

describe('checkAddress', () => {
  it.each([
    '169.254.169.254',
    '169.254.0.1',
    '169.254.255.255',
    'fd00:ec2::254',
    'FD00:EC2:0:0:0:0:0:254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '64:ff9b::169.254.169.254',
    '[fd00:ec2::254]',
  ])('always refuses the metadata address %s', (address) => {
    for (const policy of [open, strict]) {
      expect(checkAddress(address, policy)).toMatchObject({ allowed: false, kind: 'metadata' });
    }
  });

  it.each([
    ['10.1.2.3', '10.0.0.0/8'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['127.0.0.1', '127.0.0.0/8'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.127.255.255', '100.64.0.0/10'],
    ['0.0.0.0', '0.0.0.0/8'],
    ['::1', '::1/128'],
    ['::', '::/128'],
    ['fc00::1', 'fc00::/7'],
    ['fd12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['fe80::1%eth0', 'fe80::/10'],
    ['::ffff:127.0.0.1', '127.0.0.0/8'],
    ['::ffff:10.0.0.1', '10.0.0.0/8'],
  ])('refuses %s (in %s) only when private networks are refused', (address, cidr) => {
    expect(checkAddress(address, open)).toEqual({ allowed: true });
    expect(checkAddress(address, strict)).toMatchObject({ allowed: false, kind: 'private', cidr });
  });

  it.each([
    '8.8.8.8',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '169.255.0.1',
    '2001:4860:4860::8888',
    'fec0::1',
    '::ffff:8.8.8.8',
  ])('allows the public address %s under both policies', (address) => {
    expect(checkAddress(address, open)).toEqual({ allowed: true });
    expect(checkAddress(address, strict)).toEqual({ allowed: true });
  });

  it.each(['', 'not-an-ip', '1.2.3', '256.1.1.1', '1::2::3', '1:2:3:4:5:6:7:8:9'])(
    'refuses the unparseable literal %j',
    (address) => {
      expect(checkAddress(address, open)).toMatchObject({ allowed: false, kind: 'invalid' });
    },
  );
});

describe('vetHost', () => {
  it('returns a literal address unchanged', async () => {
    expect(await vetHost('127.0.0.1', open)).toEqual({
      ok: true,
      host: '127.0.0.1',
      address: '127.0.0.1',
      family: 4,
    });
    expect(await vetHost('[::1]', open)).toEqual({ ok: true, host: '::1', address: '::1', family: 6 });
  });

  it('resolves a name and vets what it resolves to', async () => {
    const vetted = await vetHost('localhost', open);
    expect(vetted).toMatchObject({ ok: true, host: 'localhost' });
    const refused = await vetHost('localhost', strict);
    expect(refused.ok).toBe(false);
    expect(refused).toMatchObject({ message: expect.stringMatching(/^refused: localhost resolves to /) });
  });

  it('names the metadata address it refuses', async () => {
    expect(await vetHost('169.254.169.254', open)).toEqual({
      ok: false,
      message: 'refused: 169.254.169.254 is a link-local / cloud metadata address',
    });
  });

  it('says when a name does not resolve', async () => {
    expect(await vetHost('db.invalid', open)).toEqual({
      ok: false,
      message: 'host name db.invalid could not be resolved',
    });
  });

  it('rejects host strings that are paths or contain spaces', async () => {
    expect(await vetHost('/var/run/postgresql', open)).toMatchObject({ ok: false });
    expect(await vetHost('a b', open)).toMatchObject({ ok: false });
  });
});
