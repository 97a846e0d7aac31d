import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.ts';

/**
 * What a client generator reads in the committed `openapi.json`, checked over the whole
 * document so a new route is held to it without a line here: optional parameters are
 * optional, operations and shared shapes have names, responses say what they are.
 */

const document = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../openapi.json'), 'utf8'));
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: { default?: unknown };
}
interface Response {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Record<string, any> }>;
}
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  responses: Record<string, Response>;
}

const operations = Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(
  ([route, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      where: `${method.toUpperCase()} ${route}`,
      method,
      route,
      op: item[method] as Operation,
    })),
);

describe('openapi.json', () => {
  it('lists the operations', () => {
    expect(operations.length).toBeGreaterThan(100);
  });

  it('requires no query parameter that has a default', () => {
    const wrong = operations.flatMap(({ where, op }) =>
      (op.parameters ?? [])
        .filter((p) => p.in === 'query' && p.required && p.schema?.default !== undefined)
        .map((p) => `${where} ?${p.name}`),
    );
    expect(wrong).toEqual([]);
    // The lists' paging fields are among them.
    const agents = operations.find((o) => o.where === 'GET /api/agents')?.op.parameters ?? [];
    expect(agents.filter((p) => p.name === 'limit' || p.name === 'offset')).toEqual([
      expect.objectContaining({ name: 'limit', required: false }),
      expect.objectContaining({ name: 'offset', required: false }),
    ]);
  });

  it('names every operation once, in camelCase', () => {
    const ids = operations.map(({ op }) => op.operationId);
    expect(
      operations.filter(({ op }) => !op.operationId?.match(/^[a-z][a-zA-Z0-9]*$/)).map((o) => o.where),
    ).toEqual([]);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
    const byRoute = Object.fromEntries(operations.map(({ where, op }) => [where, op.operationId]));
    expect(byRoute).toMatchObject({
      'GET /api/agents': 'listAgents',
      'POST /api/agents': 'createAgent',
      'GET /api/agents/{id}': 'getAgent',
      'POST /api/workflows/{id}/run': 'startWorkflowRun',
    });
  });

  it('describes every response', () => {
    const undescribed = operations.flatMap(({ where, op }) =>
      Object.entries(op.responses)
        .filter(([, response]) => !response.description || response.description === 'Default Response')
        .map(([status]) => `${where} ${status}`),
    );
    expect(undescribed).toEqual([]);
  });

  it('names the shared shapes, and each list answers a named page', () => {
    const schemas = document.components.schemas as Record<string, unknown>;
    for (const name of [
      'Agent',
      'Workflow',
      'Run',
      'RunStep',
      'Conversation',
      'Message',
      'Document',
      'Source',
      'Playbook',
      'Policy',
      'Credential',
      'CredentialType',
      'Flag',
      'Problem',
      'ModelRef',
      'ToolRef',
      'PolicyContent',
      'PolicySection',
      'PolicyModel',
      'FlagRule',
      'FlagSplitShare',
      'ActivityEvent',
    ]) {
      expect(schemas, name).toHaveProperty(name);
    }
    const pages = operations.filter(({ method, op }) =>
      method === 'get' ? (op.parameters ?? []).some((p) => p.in === 'query' && p.name === 'offset') : false,
    );
    expect(pages.length).toBeGreaterThan(10);
    for (const { where, op } of pages) {
      const ref = op.responses['200']?.content?.['application/json']?.schema?.$ref as string | undefined;
      expect(ref, where).toMatch(/^#\/components\/schemas\/\w+Page$/);
      expect(schemas, where).toHaveProperty(ref?.split('/').pop() as string);
    }
    expect(operations.find((o) => o.where === 'GET /api/agents/{id}')?.op.responses['200']).toMatchObject({
      description: 'The agent',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Agent' } } },
    });
  });

  it('refers to a shared shape rather than copying it, and leaves no naming keyword behind', () => {
    const schemas = document.components.schemas as Record<string, unknown>;
    const shared = ['ModelRef', 'ToolRef', 'PolicySection', 'PolicyModel', 'FlagRule', 'FlagSplitShare'];
    const texts = new Map(shared.map((name) => [JSON.stringify(schemas[name]), name]));
    const copies: string[] = [];
    let marked = 0;
    const walk = (node: unknown, where: string, top: boolean) => {
      if (typeof node !== 'object' || node === null) return;
      const copy = texts.get(JSON.stringify(node));
      if (copy !== undefined && !top) copies.push(`${copy} at ${where}`);
      if ('x-component' in node) marked += 1;
      for (const [key, value] of Object.entries(node)) walk(value, `${where}/${key}`, false);
    };
    walk(document.paths, '#/paths', false);
    for (const [name, schema] of Object.entries(schemas)) walk(schema, `#/components/schemas/${name}`, true);
    expect(copies).toEqual([]);
    expect(marked).toBe(0);
  });

  it('resolves every reference', () => {
    const refs = new Set<string>();
    JSON.stringify(document, (key, value) => {
      if (key === '$ref') refs.add(value);
      return value;
    });
    const unresolved = [...refs].filter(
      (ref) =>
        !ref.startsWith('#/components/schemas/') ||
        !((ref.split('/').pop() ?? '') in document.components.schemas),
    );
    expect(unresolved).toEqual([]);
    expect(refs.size).toBeGreaterThan(20);
  });

  it('gives Problem.code the closed catalogue of error codes', () => {
    expect(document.components.schemas.Problem.properties.code.enum.sort()).toEqual(
      Object.keys(ERROR_CODES).sort(),
    );
  });

  it('declares Location on the 201 and 202 answers that send it', () => {
    const located = [
      'POST /api/workflows/{id}/run 202',
      'POST /api/sources 201',
      'POST /api/sources/{id}/index 202',
      'POST /api/documents/upload 201',
      'POST /api/documents/upload 200',
      'POST /api/playbooks/promote 201',
      'POST /api/playbooks/promote 202',
    ];
    for (const entry of located) {
      const [method, route, status] = entry.split(' ') as [string, string, string];
      const response = operations.find((o) => o.where === `${method} ${route}`)?.op.responses[status];
      expect(response?.headers, entry).toHaveProperty('Location');
    }
  });

  it('describes the events of every event stream, one schema per event name', () => {
    const streams = operations.flatMap(({ where, op }) =>
      Object.values(op.responses).flatMap((response) => {
        const schema = response.content?.['text/event-stream']?.schema;
        return schema ? [{ where, schema }] : [];
      }),
    );
    expect(streams.map((s) => s.where).sort()).toEqual([
      'GET /api/activity/stream',
      'GET /api/runs/{id}/events',
      'POST /api/chat',
    ]);
    for (const { where, schema } of streams) {
      const events = schema.anyOf as { required: string[]; properties: { event: unknown } }[];
      expect(events.length, where).toBeGreaterThan(1);
      for (const event of events) {
        expect(event.required, where).toEqual(expect.arrayContaining(['event', 'data']));
        expect(event.properties.event, where).toBeDefined();
      }
    }
  });
});
