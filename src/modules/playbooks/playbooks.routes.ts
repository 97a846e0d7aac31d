import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { abortedWhenClientLeaves } from '../../http/client-gone.ts';
import { IdParams, Json, LocationHeader } from '../../http/schemas.ts';
import {
  AttachBody,
  AttachmentsResult,
  DetachBody,
  DetachResult,
  ListMinesQuery,
  ListPlaybooksQuery,
  MineBody,
  MineHeaders,
  MinePage,
  MineResult,
  MineSchema,
  PlaybookPage,
  PlaybookSchema,
  PromoteBody,
  PromoteResult,
  PutScheduleBody,
  ScheduleSchema,
  UpdatePlaybookBody,
} from './playbooks.schemas.ts';
import type { PlaybooksService } from './playbooks.service.ts';

const tags = ['Playbooks'];

/** Playbooks: mining, the records, promotion to workflows. */
export const playbooksRoutes: FastifyPluginAsyncTypebox<{ playbooks: PlaybooksService }> = async (
  app,
  { playbooks },
) => {
  app.get(
    '/playbooks',
    {
      schema: {
        operationId: 'listPlaybooks',
        tags,
        summary: 'List playbooks',
        description:
          'Playbooks of the current workspace (or of every workspace of `tenant_id` you belong to), best quality first. Archived ones are hidden unless `include_archived`. Filters: category, confidence band (high > 90 %, medium 70–90 %, low < 70 %), and `agent_id` for the playbooks attached to one agent.',
        querystring: ListPlaybooksQuery,
        response: { 200: Json('A page of playbooks', PlaybookPage) },
      },
    },
    async (request) => playbooks.list(request.caller, request.query),
  );

  app.post(
    '/playbooks/mine',
    {
      schema: {
        operationId: 'minePlaybooks',
        tags,
        summary: 'Mine playbooks',
        description:
          'Mines closed frequent patterns (FP-Growth) of the finished runs in the window, keeps those with at least `min_support` successful runs and `min_confidence` = P(success | pattern), merges near-duplicates (same agents and tools), scores them and stores the best `top_k` in the current workspace (a pattern mined before is updated, keeping your edits). Deterministic; no model is called. A window of at most `MINE_SYNC_MAX_RUNS` finished runs is mined within the request (200); a larger one, or any with `Prefer: respond-async`, in the background: 202 with the mine and its `Location`, to follow at `GET /api/playbooks/mines/{id}` or on the activity feed (`playbook.mined`, `playbook.mine_failed`).',
        headers: MineHeaders,
        body: MineBody,
        response: {
          200: Json('The mined playbooks', MineResult),
          202: Json('The background mine, to follow at its Location', MineSchema, LocationHeader('the mine')),
        },
      },
    },
    async (request, reply) => {
      const background = /(^|[\s,;])respond-async([\s,;=]|$)/i.test(request.headers.prefer ?? '');
      const outcome = await playbooks.requestMine(request.caller, request.body, {
        background,
        signal: abortedWhenClientLeaves(reply),
      });
      if ('mined' in outcome) return outcome.mined;
      if (background) reply.header('Preference-Applied', 'respond-async');
      return reply
        .status(202)
        .header('Location', `/api/playbooks/mines/${outcome.queued.id}`)
        .send(outcome.queued);
    },
  );

  app.get(
    '/playbooks/mines',
    {
      schema: {
        tags,
        operationId: 'listPlaybookMines',
        summary: 'List background mines',
        description: 'The current workspace’s background mines, newest first, with their status and results.',
        querystring: ListMinesQuery,
        response: { 200: Json('A page of the workspace’s background mines', MinePage) },
      },
    },
    async (request) => playbooks.listMines(request.caller, request.query),
  );

  app.get(
    '/playbooks/mines/:id',
    {
      schema: {
        tags,
        operationId: 'getPlaybookMine',
        summary: 'Get a background mine',
        description:
          '`queued`, then `running` (with its `phase`: loading the runs, mining, storing), then `completed` with the same `result` a mine within the request answers, or `failed` with the reason.',
        params: IdParams,
        response: { 200: Json('The background mine', MineSchema) },
      },
    },
    async (request) => playbooks.getMine(request.caller, request.params.id),
  );

  app.post(
    '/playbooks/promote',
    {
      schema: {
        operationId: 'promotePlaybook',
        tags,
        summary: 'Promote a playbook to a workflow',
        description:
          'Creates a workflow from the playbook: its agents (this workspace’s agents of those names, in the usual order), tools, goal template, execution policy (timeout 15 minutes) and context template. `create_and_execute` also starts a run (202, with `Location` of the run); `save_as_template` marks the workflow as a template.',
        body: PromoteBody,
        response: {
          201: Json('The created workflow', PromoteResult, LocationHeader('the created workflow')),
          202: Json(
            'The created workflow and its queued run',
            PromoteResult,
            LocationHeader('the queued run'),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await playbooks.promote(request.caller, request.body);
      if (result.run) {
        return reply.status(202).header('Location', `/api/runs/${result.run.id}`).send(result);
      }
      return reply.status(201).header('Location', `/api/workflows/${result.workflow.id}`).send(result);
    },
  );

  app.get(
    '/playbooks/:id',
    {
      schema: {
        operationId: 'getPlaybook',
        tags,
        summary: 'Get a playbook',
        description:
          'One playbook of the current workspace, with its patterns, figures, quality parts and category votes; another workspace’s is 404.',
        params: IdParams,
        response: { 200: Json('The playbook', PlaybookSchema) },
      },
    },
    async (request) => playbooks.get(request.caller, request.params.id),
  );

  app.put(
    '/playbooks/:id',
    {
      schema: {
        operationId: 'updatePlaybook',
        tags,
        summary: 'Edit a playbook',
        description: 'Name, description or category; later mining keeps what you set.',
        params: IdParams,
        body: UpdatePlaybookBody,
        response: { 200: Json('The updated playbook', PlaybookSchema) },
      },
    },
    async (request) => playbooks.update(request.caller, request.params.id, request.body),
  );

  app.post(
    '/playbooks/:id/archive',
    {
      schema: {
        operationId: 'archivePlaybook',
        tags,
        summary: 'Archive a playbook',
        description:
          'Hides it from lists (unless include_archived) and from agents it is attached to; mining again keeps it archived.',
        params: IdParams,
        response: { 200: Json('The archived playbook', PlaybookSchema) },
      },
    },
    async (request) => playbooks.archive(request.caller, request.params.id),
  );

  app.post(
    '/playbooks/:id/unarchive',
    {
      schema: {
        operationId: 'unarchivePlaybook',
        tags,
        summary: 'Unarchive a playbook',
        description: 'Shows it again, including one the nightly job archived as a low performer.',
        params: IdParams,
        response: { 200: Json('The unarchived playbook', PlaybookSchema) },
      },
    },
    async (request) => playbooks.unarchive(request.caller, request.params.id),
  );

  app.post(
    '/playbooks/attach',
    {
      schema: {
        operationId: 'attachPlaybook',
        tags,
        summary: 'Attach a playbook to agents',
        description:
          'Binds the playbook to agents of this workspace as an auto-triggered macro: when the rule `when` (the condition language over goal, context, inputs, tags, workflow and agent) holds for a run step of one of them, `suggest` adds the playbook’s name and description to the agent’s prompt and `auto` its steps. Each trigger is recorded on the step (`playbook_triggers`) and in the run’s events. Attaching again replaces the rule.',
        body: AttachBody,
        response: { 200: Json('The agents the playbook is now attached to', AttachmentsResult) },
      },
    },
    async (request) => playbooks.attach(request.caller, request.body),
  );

  app.post(
    '/playbooks/detach',
    {
      schema: {
        operationId: 'detachPlaybook',
        tags,
        summary: 'Detach a playbook from agents',
        description: 'From the agents given, or from every agent without `agent_ids`.',
        body: DetachBody,
        response: { 200: Json('The agents the playbook is still attached to', DetachResult) },
      },
    },
    async (request) => playbooks.detach(request.caller, request.body),
  );

  app.get(
    '/playbooks/:id/attachments',
    {
      schema: {
        operationId: 'listPlaybookAttachments',
        tags,
        summary: 'The agents a playbook is attached to',
        description: 'Each attachment with its rule, mode and how many run steps it triggered.',
        params: IdParams,
        response: { 200: Json('The agents the playbook is attached to', AttachmentsResult) },
      },
    },
    async (request) => playbooks.attachments(request.caller, request.params.id),
  );

  app.get(
    '/playbooks/schedule',
    {
      schema: {
        operationId: 'getMiningSchedule',
        tags,
        summary: 'The nightly mining schedule',
        description:
          'When this workspace is mined by the nightly job (default 0 2 * * * in UTC), the next run, and the outcome of the last one.',
        response: { 200: Json('The nightly mining schedule', ScheduleSchema) },
      },
    },
    async (request) => playbooks.schedule(request.caller),
  );

  app.put(
    '/playbooks/schedule',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'updateMiningSchedule',
        tags,
        summary: 'Change the nightly mining schedule',
        description:
          'Admins. A five-field cron and an IANA time zone; null goes back to the default; enabled false turns it off.',
        body: PutScheduleBody,
        response: { 200: Json('The updated nightly mining schedule', ScheduleSchema) },
      },
    },
    async (request) => playbooks.putSchedule(request.caller, request.body),
  );
};
