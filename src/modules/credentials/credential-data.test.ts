import { describe, expect, it } from 'vitest';
import type { FieldDefinition } from '../../db/schema/credentials.ts';
import {
  changedFieldNames,
  checkFieldDefinitions,
  MASK,
  maskCredentialData,
  prepareCredentialData,
} from './credential-data.ts';

const postgres: FieldDefinition[] = [
  { name: 'host', label: 'Host', type: 'string', required: true },
  { name: 'port', label: 'Port', type: 'number', default: 5432 },
  { name: 'password', label: 'Password', type: 'password', required: true },
  { name: 'ssl', label: 'TLS', type: 'boolean', default: false },
  { name: 'mode', label: 'Mode', type: 'options', options: [{ value: 'a' }, { value: 'b' }] },
];

describe('prepareCredentialData', () => {
  it('applies defaults and accepts valid values', () => {
    expect(prepareCredentialData('pg', postgres, { host: 'db', password: 'x', mode: 'a' })).toEqual({
      data: { host: 'db', port: 5432, password: 'x', ssl: false, mode: 'a' },
      errors: [],
    });
  });

  it('names every field at fault', () => {
    const { errors } = prepareCredentialData('pg', postgres, {
      port: '5432',
      ssl: 'yes',
      mode: 'c',
      extra: 1,
    });
    expect(errors).toEqual([
      { field: 'body.data.port', message: 'must be a number' },
      { field: 'body.data.ssl', message: 'must be a boolean' },
      { field: 'body.data.mode', message: 'must be one of: a, b' },
      { field: 'body.data.extra', message: 'is not a field of pg' },
      { field: 'body.data.host', message: 'is required' },
      { field: 'body.data.password', message: 'is required' },
    ]);
  });

  it('merges a partial update: omitted fields kept, null clears, required re-checked', () => {
    const previous = { host: 'db', port: 5432, password: 'old', ssl: false };
    expect(prepareCredentialData('pg', postgres, { password: 'new', port: null }, previous).data).toEqual({
      host: 'db',
      port: 5432,
      password: 'new',
      ssl: false,
    });
    expect(prepareCredentialData('pg', postgres, { host: null }, previous).errors).toEqual([
      { field: 'body.data.host', message: 'is required' },
    ]);
  });

  it('fills hidden fields itself and refuses them from clients', () => {
    const basic: FieldDefinition[] = [
      { name: 'username', label: 'U', type: 'string', required: true },
      { name: 'password', label: 'P', type: 'password', required: true },
      { name: 'basic_token', label: 'T', type: 'hidden' },
      { name: 'fixed', label: 'F', type: 'hidden', default: 'v1' },
    ];
    const { data } = prepareCredentialData('basic_auth_credentials', basic, { username: 'a', password: 'b' });
    expect(data).toEqual({
      username: 'a',
      password: 'b',
      basic_token: Buffer.from('a:b').toString('base64'),
      fixed: 'v1',
    });
    expect(prepareCredentialData('basic_auth_credentials', basic, { basic_token: 'x' }).errors[0]).toEqual({
      field: 'body.data.basic_token',
      message: 'is filled in by the service and cannot be set',
    });
  });
});

describe('masking and changes', () => {
  it('masks password and hidden fields only', () => {
    expect(maskCredentialData(postgres, { host: 'db', password: 'x' })).toEqual({
      host: 'db',
      password: MASK,
    });
  });

  it('lists changed field names, never values', () => {
    expect(changedFieldNames({ a: 1, b: 'x' }, { a: 1, b: 'y', c: true })).toEqual(['b', 'c']);
  });
});

describe('checkFieldDefinitions', () => {
  it('finds duplicate names, empty options and bad defaults', () => {
    expect(
      checkFieldDefinitions([
        { name: 'a', label: 'A', type: 'string' },
        { name: 'a', label: 'A2', type: 'number', default: 'x' },
        { name: 'o', label: 'O', type: 'options', options: [] },
      ]),
    ).toEqual([
      { field: 'body.schema_definition.1.name', message: 'duplicates field "a"' },
      { field: 'body.schema_definition.1.default', message: 'must be a number' },
      {
        field: 'body.schema_definition.2.options',
        message: 'must list at least one option for an options field',
      },
    ]);
  });
});
