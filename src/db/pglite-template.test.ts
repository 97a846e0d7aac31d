import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { pgliteTemplateFor, writePgliteTemplate } from './pglite-template.ts';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pglite-template-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the PGlite template', () => {
  it('starts a fresh directory as a working cluster, and is ignored once the directory has one', async () => {
    const file = path.join(scratch, 'template.tar.gz');
    const directory = path.join(scratch, 'pgdata');
    expect(pgliteTemplateFor(directory, file)).toBeUndefined();

    await writePgliteTemplate(file);
    const template = pgliteTemplateFor(directory, file);
    expect(template?.size).toBeGreaterThan(0);
    const first = await PGlite.create(directory, { loadDataDir: template });
    await first.exec('create table kept (id int); insert into kept values (7)');
    await first.close();

    expect(fs.existsSync(path.join(directory, 'PG_VERSION'))).toBe(true);
    expect(pgliteTemplateFor(directory, file)).toBeUndefined();
    const again = await PGlite.create(directory);
    expect((await again.query<{ id: number }>('select id from kept')).rows).toEqual([{ id: 7 }]);
    await again.close();
  });
});
