import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { type OpenAPI3 } from 'openapi-typescript';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * What a client of the API does: generates its types from the committed `openapi.json` with
 * openapi-typescript, calls the API through openapi-fetch, and names the shapes it reads
 * (`components['schemas']['Agent']`). The generated client is type-checked with the project's
 * `tsc`: a list that cannot be called without its defaulted `limit` and `offset`, a shape that
 * loses its name, or a `Problem.code` that stops being a closed set fails here.
 *
 * openapi-typescript 6 renders types as text; version 7 builds them with the TypeScript
 * compiler API, which TypeScript 7 (this project's compiler) no longer ships
 * (openapi-ts/openapi-typescript#2841). openapi-fetch 0.9 is the client for version 6's output.
 */

const root = path.resolve(import.meta.dirname, '../..');
const document = JSON.parse(fs.readFileSync(path.join(root, 'openapi.json'), 'utf8'));
// Under node_modules, so the client's `import 'openapi-fetch'` resolves to the project's copy.
const cacheDir = path.join(root, 'node_modules/.cache');
fs.mkdirSync(cacheDir, { recursive: true });
const workDir = fs.mkdtempSync(path.join(cacheDir, 'generated-client-'));
// KEEP_CLIENT=1 keeps the generated client, to read what failed.
afterAll(() => {
  if (!process.env.KEEP_CLIENT) fs.rmSync(workDir, { recursive: true, force: true });
});

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: { type?: string; enum?: unknown[]; format?: string };
}
interface Operation {
  parameters?: Parameter[];
}

/** A value of the parameter's type, as TypeScript source. */
function sample({ schema }: Parameter): string {
  if (schema?.enum) return JSON.stringify(schema.enum[0]);
  if (schema?.type === 'integer' || schema?.type === 'number') return '1';
  if (schema?.type === 'boolean') return 'true';
  return schema?.format === 'uuid' ? "'00000000-0000-4000-8000-000000000000'" : "'x'";
}

/**
 * Every list of the document: a GET that pages with `limit`. Each is called with only what it
 * requires (its path parameters, any required query field), so a new list is covered without
 * a line here.
 */
function listCalls(): string[] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(
    ([route, item]) => {
      const parameters = item.get?.parameters ?? [];
      if (!parameters.some((p) => p.in === 'query' && p.name === 'limit')) return [];
      const pathParams = parameters
        .filter((p) => p.in === 'path')
        .map((p) => `${JSON.stringify(p.name)}: ${sample(p)}`);
      const requiredQuery = parameters
        .filter((p) => p.in === 'query' && p.required)
        .map((p) => `${JSON.stringify(p.name)}: ${sample(p)}`);
      const params = [
        pathParams.length > 0 ? `path: { ${pathParams.join(', ')} }` : '',
        requiredQuery.length > 0 ? `query: { ${requiredQuery.join(', ')} }` : '',
      ].filter(Boolean);
      const init = params.length > 0 ? `, { params: { ${params.join(', ')} } }` : '';
      return [`  await client.GET(${JSON.stringify(route)}${init});`];
    },
  );
}

const CLIENT = (calls: string[]) => `import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

type Schemas = components['schemas'];
const client = createClient<paths>({ baseUrl: 'http://localhost:3000' });

/** Every list, with no optional parameter. */
export async function everyList(): Promise<void> {
${calls.join('\n')}
}

/** Named shapes, as a console would use them. */
export async function namedShapes(): Promise<string[]> {
  const page: Schemas['AgentPage'] | undefined = (await client.GET('/api/agents')).data;
  const agents: Schemas['Agent'][] = page?.items ?? [];
  const created = await client.POST('/api/agents', { body: { name: 'Researcher' } });
  const agent: Schemas['Agent'] | undefined = created.data;
  const problem: Schemas['Problem'] | undefined = created.error;
  const run: Schemas['Run'] | undefined = (
    await client.POST('/api/workflows/{id}/run', { params: { path: { id: 'x' } }, body: {} })
  ).data;
  const steps: Schemas['RunStep'][] =
    (await client.GET('/api/runs/{id}', { params: { path: { id: 'x' } } })).data?.steps ?? [];
  const shapes: [
    Schemas['Workflow'],
    Schemas['Conversation'],
    Schemas['Message'],
    Schemas['Document'],
    Schemas['Source'],
    Schemas['Playbook'],
    Schemas['Policy'],
    Schemas['Credential'],
    Schemas['CredentialType'],
    Schemas['Flag'],
    Schemas['ModelRef'],
    Schemas['ToolRef'],
    Schemas['PolicyContent'],
    Schemas['FlagRule'],
    Schemas['ActivityEvent'],
  ] | undefined = undefined;

  void shapes;
  return [...agents.map((a) => a.name), agent?.id ?? '', problem?.code ?? '', run?.status ?? '', String(steps.length)];
}

/** A shared shape is one named type wherever it appears. */
export function sharedShapes(agent: Schemas['Agent'], policy: Schemas['Policy'], flag: Schemas['Flag']): unknown[] {
  const model: Schemas['ModelRef'] | null = agent.model;
  const sections: Schemas['PolicySection'][] = policy.content.sections;
  const rules: Schemas['FlagRule'][] = flag.rules;
  return [model, sections, rules];
}

/** Problem.code is the closed catalogue: a client can switch on it. */
export function codes(code: Schemas['Problem']['code']): string {
  const known: Schemas['Problem']['code'] = 'agent_not_found';
  // @ts-expect-error not a code of the catalogue
  const unknown: Schemas['Problem']['code'] = 'no_such_code';
  return [code, known, unknown].join();
}
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'es2023',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    allowImportingTsExtensions: true,
    lib: ['es2023', 'dom'],
    types: [],
    skipLibCheck: true,
  },
  files: ['api.ts', 'client.ts'],
};

describe('a client generated from openapi.json', () => {
  it('names its types and calls every list without optional parameters', async () => {
    const calls = listCalls();
    // Agents, workflows, runs, credentials, documents, sources, ... and their audit trails.
    expect(calls.length).toBeGreaterThanOrEqual(15);
    fs.writeFileSync(path.join(workDir, 'api.ts'), await openapiTS(document as OpenAPI3));
    fs.writeFileSync(path.join(workDir, 'client.ts'), CLIENT(calls));
    fs.writeFileSync(path.join(workDir, 'package.json'), JSON.stringify({ type: 'module' }));
    fs.writeFileSync(path.join(workDir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    const tsc = path.join(root, 'node_modules/.bin/tsc');
    const result = await promisify(execFile)(tsc, ['--noEmit', '-p', workDir], { cwd: workDir }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    expect(result, 'the generated client does not type-check').toBe('');
  }, 120_000);
});
