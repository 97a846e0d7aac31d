import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EtagHeader, Json } from '../../http/schemas.ts';
import {
  AssembleBody,
  AssemblySchema,
  ExperimentResultsSchema,
  ExperimentSchema,
  GetExperimentQuery,
  GetPolicyQuery,
  ListPoliciesQuery,
  PolicyParams,
  PolicySchema,
  PolicySummaryPage,
  PutPolicyBody,
  PutPolicyHeaders,
  SetExperimentBody,
} from './policies.schemas.ts';
import type { PoliciesService } from './policies.service.ts';

const tags = ['Policies'];

/** Policies and their A/B tests (spec 4.5; docs/policies.md). */
export const policiesRoutes: FastifyPluginAsyncTypebox<{ policies: PoliciesService }> = async (
  app,
  { policies },
) => {
  app.get(
    '/policy',
    {
      schema: {
        operationId: 'listPolicies',
        tags,
        summary: 'List policies',
        description:
          'The current workspace’s policies, most recently changed first (a new version or a moved label): each with its latest version number, that version’s description, every label and the version it points at, when it last changed, and whether a running A/B test has it as an arm. `q` matches the policy id or the description, case-insensitive. Another workspace’s policies are never listed.',
        querystring: ListPoliciesQuery,
        response: { 200: Json('A page of policies', PolicySummaryPage) },
      },
    },
    async (request) => policies.list(request.caller, request.query),
  );

  // Static routes first in the docs; the router prefers them to /policy/{policy_id} anyway.
  app.post(
    '/policy/abtest/set',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'setPolicyExperiment',
        tags,
        summary: 'Create, update, start, stop or conclude an A/B test',
        description:
          'Admins only. One experiment per pair of policies (policy_a is the control, policy_b the treatment; each at a label or a version): weights (default 50/50), coverage (share of units in it), unit (conversation by default, or user), the primary metric and guardrails. `action`: start (default for a new one), stop, or choose_winner with `winner` a or b, which moves the policy’s `production` label to the winning version (both arms must be of one policy). Assignment is sticky: a hash of the experiment’s salt and the unit id into 10,000 buckets.',
        body: SetExperimentBody,
        response: { 200: Json('The A/B test after the change', ExperimentSchema) },
      },
    },
    async (request) => policies.setExperiment(request.caller, request.body),
  );

  app.get(
    '/policy/abtest/get',
    {
      schema: {
        operationId: 'getPolicyExperiment',
        tags,
        summary: 'Read an A/B test and its verdict',
        description:
          'The experiment between policy_a and policy_b: units per variant (exposures), a sample-ratio-mismatch check (chi-squared; p < 0.001 blocks any verdict), per metric (success rate, cost per run, p95 latency; retrieval hit-rate is null with the reason) each arm’s value, the relative lift with a 95 % interval, the chance to win and the expected loss (Bayesian normal model, delta method), and a verdict that needs 100 units per arm.',
        querystring: GetExperimentQuery,
        response: { 200: Json('The A/B test and its verdict', ExperimentResultsSchema) },
      },
    },
    async (request) => policies.getExperiment(request.caller, request.query.policy_a, request.query.policy_b),
  );

  app.get(
    '/policy/:policy_id',
    {
      schema: {
        operationId: 'getPolicy',
        tags,
        summary: 'Get a policy',
        description:
          'The policy’s content at a label or a version (`production`, else `latest`, when neither is given), with every label, the version list (newest first) and an `ETag` naming the latest version. `tenant_id` narrows to your workspace of that tenant: another tenant’s policy is 404, never shown.',
        params: PolicyParams,
        querystring: GetPolicyQuery,
        response: {
          200: Json(
            'The policy version asked for',
            PolicySchema,
            EtagHeader('the latest version, as `"<version>"`'),
          ),
        },
      },
    },
    async (request, reply) => {
      const policy = await policies.get(request.caller, request.params.policy_id, request.query);
      const latest = policy.labels.latest;
      if (latest !== undefined) reply.header('etag', `"${latest}"`);
      return policy;
    },
  );

  app.put(
    '/policy/:policy_id',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'writePolicy',
        tags,
        summary: 'Write a new version of a policy',
        description:
          'Admins only. The body is the whole policy (ordered sections with optional conditions, variables, model parameters and fallbacks, tools, retrieval settings, playbooks, token budget) and optional `labels` to move to the new version (`latest` always moves). Every write adds an immutable version: 201 for a new policy, 200 for a new version. `If-Match` with the current version (`"3"`) is optional; another current version is 412.',
        params: PolicyParams,
        headers: PutPolicyHeaders,
        body: PutPolicyBody,
        response: {
          200: Json('The new version of an existing policy', PolicySchema, EtagHeader('the new version')),
          201: Json('The created policy, version 1', PolicySchema, EtagHeader('the new version')),
        },
      },
    },
    async (request, reply) => {
      const { created, policy } = await policies.put(
        request.caller,
        request.params.policy_id,
        request.body,
        request.headers['if-match'],
      );
      reply.header('etag', `"${policy.version}"`);
      return reply.code(created ? 201 : 200).send(policy);
    },
  );

  app.post(
    '/policy/:policy_id/assemble',
    {
      schema: {
        operationId: 'assemblePolicy',
        tags,
        summary: 'Assemble a policy',
        description:
          'Renders the policy deterministically for the inputs: conditions (the condition language) choose the sections, static sections come first (for provider prompt caches), `{{variable}}` is substituted (nothing else runs), and sections over the token budget are dropped from the end. Answers the messages, the per-section report, the model, tools and retrieval settings, token totals, unresolved variables, the version and content hash, and the experiment variant when a running A/B test serves this unit. An exposure (a unit of the experiment) is recorded only for an admin’s or owner’s assemble without `dry_run`; a member is served the variant but adds no unit (run steps and chat turns record theirs). A required variable missing is 422 naming it. Members may assemble.',
        params: PolicyParams,
        body: AssembleBody,
        response: { 200: Json('The assembled context', AssemblySchema) },
      },
    },
    async (request) => policies.assemble(request.caller, request.params.policy_id, request.body),
  );
};
