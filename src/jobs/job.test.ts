import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { bindJob, defineJob, MAX_JOB_ATTEMPTS } from './job.ts';

describe('defineJob and bindJob', () => {
  const payload = Type.Object({ run_id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

  it('fills in the defaults and hands the handler its dependencies, payload and signal', async () => {
    const seen: unknown[] = [];
    const job = bindJob(
      defineJob({
        name: 'run.execute',
        payload,
        async handle(deps: { tag: string }, data, signal) {
          seen.push(deps.tag, data.run_id, signal.aborted);
        },
      }),
      { tag: 'deps' },
    );
    expect(job).toMatchObject({ name: 'run.execute', attempts: 3, backoffMs: 1000, timeoutMs: 900_000 });
    const id = '6b1c3f9e-8a2d-4f7b-9c1e-2d3f4a5b6c7d';
    await job.run({ run_id: id }, new AbortController().signal);
    expect(seen).toEqual(['deps', id, false]);
  });

  it('names what is wrong with a payload', () => {
    const job = bindJob(defineJob({ name: 'x', payload, handle: async () => {} }), {});
    expect(job.check({ run_id: '6b1c3f9e-8a2d-4f7b-9c1e-2d3f4a5b6c7d' })).toEqual([]);
    expect(job.check({ run_id: 'nope', extra: 1 })).toEqual(
      expect.arrayContaining(['/run_id: must match format "uuid"']),
    );
    expect(job.check(undefined)).toEqual(['/: must be object']);
  });

  it(`refuses attempts outside 1 to ${MAX_JOB_ATTEMPTS}`, () => {
    for (const attempts of [0, MAX_JOB_ATTEMPTS + 1, 1.5]) {
      expect(() => defineJob({ name: 'x', payload, attempts, handle: async () => {} })).toThrow(
        /attempts must be/,
      );
    }
  });
});
