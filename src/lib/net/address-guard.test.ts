import { describe, expect, it } from 'vitest';
import { checkAddress, cidrRange, parseCidr, vetHost, workspaceAddressPolicy } from './address-guard.ts';

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
    ['10.255.255.255', '10.0.0.0/8'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.255.255.254', '127.0.0.0/8'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.127.255.255', '100.64.0.0/10'],
    ['::1', '::1/128'],
    ['0:0:0:0:0:0:0:1', '::1/128'],
    ['fc00::1', 'fc00::/7'],
    ['fd12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['fe80::1%eth0', 'fe80::/10'],
    ['febf:ffff::1', 'fe80::/10'],
    ['fec0::1', 'fec0::/10'],
    ['feff:ffff::1', 'fec0::/10'],
    ['64:ff9b:1::a00:1', '64:ff9b:1::/48'],
    ['64:ff9b:1:ffff::7f00:1', '64:ff9b:1::/48'],
  ])('refuses the private address %s (in %s) only when private networks are refused', (address, cidr) => {
    expect(checkAddress(address, open)).toEqual({ allowed: true });
    expect(checkAddress(address, strict)).toMatchObject({ allowed: false, kind: 'private', cidr });
  });

  // IPv6 forms that lead to an IPv4 host are judged as that host.
  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1', '127.0.0.0/8'],
    ['::ffff:7f00:1', '127.0.0.1', '127.0.0.0/8'],
    ['::ffff:10.0.0.1', '10.0.0.1', '10.0.0.0/8'],
    ['[::ffff:192.168.0.1]', '192.168.0.1', '192.168.0.0/16'],
    // NAT64, the well-known prefix.
    ['64:ff9b::127.0.0.1', '127.0.0.1', '127.0.0.0/8'],
    ['64:ff9b::a00:1', '10.0.0.1', '10.0.0.0/8'],
    ['64:ff9b::ac10:1', '172.16.0.1', '172.16.0.0/12'],
    // 6to4: 2002:AABB:CCDD::/48 is the site behind AA.BB.CC.DD.
    ['2002:7f00:1::1', '127.0.0.1', '127.0.0.0/8'],
    ['2002:a00:1::', '10.0.0.1', '10.0.0.0/8'],
    ['2002:c0a8:101:5::1', '192.168.1.1', '192.168.0.0/16'],
    // Teredo: 2001:0:<server>:<flags>:<port ^ ffff>:<client ^ ffffffff>.
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', '127.0.0.1', '127.0.0.0/8'],
    ['2001::4136:e378:8000:63bf:f5ff:fffe', '10.0.0.1', '10.0.0.0/8'],
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', '10.0.0.1', '10.0.0.0/8'],
  ])(
    'refuses %s, which reaches %s (in %s), only when private networks are refused',
    (address, embedded, cidr) => {
      expect(checkAddress(address, open)).toEqual({ allowed: true });
      expect(checkAddress(address, strict)).toEqual({
        allowed: false,
        kind: 'private',
        cidr,
        address,
        embedded,
      });
    },
  );

  it.each([
    ['::ffff:169.254.169.254', '169.254.169.254'],
    ['2002:a9fe:a9fe::1', '169.254.169.254'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', '169.254.169.254'],
    ['64:ff9b::a9fe:a9fe', '169.254.169.254'],
  ])('refuses %s, an IPv6 form of the metadata address, under every policy', (address, embedded) => {
    for (const policy of [open, strict]) {
      expect(checkAddress(address, policy)).toMatchObject({ allowed: false, kind: 'metadata', embedded });
    }
  });

  it.each([
    ['0.0.0.0', '0.0.0.0/8'],
    ['0.255.255.255', '0.0.0.0/8'],
    ['192.0.0.8', '192.0.0.0/24'],
    ['192.0.2.1', '192.0.2.0/24'],
    ['192.88.99.1', '192.88.99.0/24'],
    ['198.18.0.1', '198.18.0.0/15'],
    ['198.19.255.255', '198.18.0.0/15'],
    ['198.51.100.7', '198.51.100.0/24'],
    ['203.0.113.9', '203.0.113.0/24'],
    ['224.0.0.1', '224.0.0.0/4'],
    ['239.255.255.250', '224.0.0.0/4'],
    ['240.0.0.1', '240.0.0.0/4'],
    ['255.255.255.254', '240.0.0.0/4'],
    ['255.255.255.255', '255.255.255.255/32'],
    ['::', '::/128'],
    ['::127.0.0.1', '::/96'],
    ['::a00:1', '::/96'],
    ['::8.8.8.8', '::/96'],
    ['100::1', '100::/64'],
    ['2001:db8::1', '2001:db8::/32'],
    ['3fff::1', '3fff::/20'],
    ['ff02::1', 'ff00::/8'],
    ['ff05::1:3', 'ff00::/8'],
    ['::ffff:192.0.2.1', '192.0.2.0/24'],
    ['2002:e000:1::', '224.0.0.0/4'],
  ])('refuses the reserved address %s (in %s) under every policy', (address, cidr) => {
    for (const policy of [open, strict]) {
      expect(checkAddress(address, policy)).toMatchObject({ allowed: false, kind: 'reserved', cidr });
    }
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '169.255.0.1',
    '192.0.1.255',
    '192.0.3.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2001:4860:4860::8888',
    '2606:4700::1111',
    'fbff::1',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
  ])('allows the public address %s under both policies', (address) => {
    expect(checkAddress(address, open)).toEqual({ allowed: true });
    expect(checkAddress(address, strict)).toEqual({ allowed: true });
  });

  it('admits the operator’s listed ranges under any policy, and never the metadata ranges', () => {
    const gateway = {
      refusePrivateNetworks: true,
      allowed: [cidrRange('10.1.2.3/32'), cidrRange('127.0.0.1'), cidrRange('169.254.0.0/16')],
    };
    expect(checkAddress('10.1.2.3', gateway)).toEqual({ allowed: true });
    expect(checkAddress('::ffff:10.1.2.3', gateway)).toEqual({ allowed: true });
    expect(checkAddress('2002:a01:203::', gateway)).toEqual({ allowed: true });
    expect(checkAddress('127.0.0.1', gateway)).toEqual({ allowed: true });
    expect(checkAddress('10.1.2.4', gateway)).toMatchObject({ allowed: false, cidr: '10.0.0.0/8' });
    expect(checkAddress('127.0.0.2', gateway)).toMatchObject({ allowed: false, cidr: '127.0.0.0/8' });
    expect(checkAddress('169.254.169.254', gateway)).toMatchObject({ allowed: false, kind: 'metadata' });
    const lab = { refusePrivateNetworks: false, allowed: [cidrRange('198.18.0.0/15')] };
    expect(checkAddress('198.18.7.7', lab)).toEqual({ allowed: true });
    expect(checkAddress('192.0.2.1', lab)).toMatchObject({ allowed: false, kind: 'reserved' });
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

describe('parseCidr', () => {
  it('reads an address with or without a prefix, and nothing else', () => {
    expect(parseCidr('10.0.0.0/8')).toMatchObject({ cidr: '10.0.0.0/8', prefix: 8 });
    expect(parseCidr(' 127.0.0.1 ')).toMatchObject({ cidr: '127.0.0.1/32', prefix: 32 });
    expect(parseCidr('fd00::/8')).toMatchObject({ prefix: 8 });
    expect(parseCidr('::1')).toMatchObject({ prefix: 128 });
    for (const bad of [
      '',
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/',
      '10.0.0.0/x',
      'example.com',
      '1.2.3.4/8/9',
    ]) {
      expect(parseCidr(bad), bad).toBeUndefined();
    }
  });
});

describe('workspaceAddressPolicy', () => {
  const platform = (allowPrivateNetworks: boolean) => ({ allowPrivateNetworks, allowed: [] });
  it('lets a workspace narrow the platform’s policy, never widen it', () => {
    expect(workspaceAddressPolicy(platform(false), false).refusePrivateNetworks).toBe(true);
    expect(workspaceAddressPolicy(platform(false), true).refusePrivateNetworks).toBe(true);
    expect(workspaceAddressPolicy(platform(true), true).refusePrivateNetworks).toBe(true);
    expect(workspaceAddressPolicy(platform(true), false).refusePrivateNetworks).toBe(false);
  });

  it('keeps the operator’s listed ranges', () => {
    const allowed = [cidrRange('10.1.2.3/32')];
    expect(workspaceAddressPolicy({ allowPrivateNetworks: false, allowed }, true).allowed).toBe(allowed);
  });
});
