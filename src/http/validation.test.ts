import { describe, expect, it } from 'vitest';
import { createValidatorCompiler, toFieldErrors } from './validation.ts';

const compile = createValidatorCompiler();
const schema = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    count: { type: 'integer' },
    kind: { type: 'string', enum: ['a', 'b'] },
    nested: { type: 'object', properties: { 'a/b': { type: 'string', format: 'uuid' } } },
  },
};

function errorsOf(httpPart: string, value: unknown) {
  const validate = compile({ schema, method: 'POST', url: '/', httpPart }) as ((v: unknown) => boolean) & {
    errors?: never[];
  };
  return validate(value) ? [] : toFieldErrors(validate.errors ?? [], httpPart);
}

describe('validation', () => {
  it('names every field at fault, JSON pointer decoded', () => {
    expect(errorsOf('body', { count: 'x', kind: 'c', extra: 1, nested: { 'a/b': 'nope' } })).toEqual([
      { field: 'body.name', message: 'is required' },
      { field: 'body.extra', message: 'is not an allowed field' },
      { field: 'body.count', message: 'must be integer' },
      { field: 'body.kind', message: 'must be one of: a, b' },
      { field: 'body.nested.a/b', message: 'must be a valid UUID' },
    ]);
  });

  it('coerces query strings but never bodies', () => {
    expect(errorsOf('querystring', { name: 'x', count: '5' })).toEqual([]);
    expect(errorsOf('body', { name: 'x', count: '5' })).toEqual([
      { field: 'body.count', message: 'must be integer' },
    ]);
  });
});
