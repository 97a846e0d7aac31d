import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { abortedWhenClientLeaves } from '../../http/client-gone.ts';
import { Json } from '../../http/schemas.ts';
import { AuditExportBody, AuditInfoQuery, AuditInfoSchema } from './audit.schemas.ts';
import { type AuditService, exportFileName } from './audit.service.ts';

const tags = ['Settings'];

const CONTENT_TYPES = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  ocsf: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
} as const;

/** The workspace audit trail (spec 4.8; docs/audit.md). Admins and owners only. */
export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (app, { audit }) => {
  app.get(
    '/settings/audit/info',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'getAuditInfo',
        tags,
        summary: 'Audit trail summary and verification',
        description:
          'Admins and owners. Counts of the workspace’s audit records (in total and by action), the oldest and newest time, the retention, and whether the hash chain verifies: every record is re-hashed in order, in batches, and the first record that does not link or match its hash is named (first_broken_id). With scope=platform, the same for the platform trail (changes that belong to no workspace), for platform operators only (403 platform_admin_required).',
        querystring: AuditInfoQuery,
        response: { 200: Json('The audit trail summary and verification', AuditInfoSchema) },
      },
    },
    async (request) => audit.info(request.caller, request.query.scope),
  );

  app.post(
    '/settings/audit/export',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'exportAudit',
        tags,
        summary: 'Export the audit trail',
        description:
          'Admins and owners. Streams the workspace’s audit records oldest first, merged by time with the vault’s credential audit records (source vault, action credential.<action>), as JSON lines, CSV (RFC 4180, header row) or OCSF 1.x API Activity events (class_uid 6003). Optional time range (from inclusive, to exclusive) and action filter. Sent as an attachment; read from the database in batches as the client reads, so any size exports in bounded memory. With scope platform, the platform trail instead (platform operators only).',
        body: AuditExportBody,
        response: {
          200: {
            description: 'The export file, streamed',
            content: {
              'application/x-ndjson': { schema: Type.String() },
              'text/csv': { schema: Type.String() },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const { format } = request.body;
      const chunks = audit.export(request.caller, request.body, abortedWhenClientLeaves(reply));
      reply
        .type(CONTENT_TYPES[format])
        .header(
          'content-disposition',
          `attachment; filename="${exportFileName(request.body.scope === 'platform' ? 'platform' : request.caller.workspaceId, format, new Date())}"`,
        )
        .header('cache-control', 'no-store');
      // A stream, sent as it is read: the schema documents the text the stream carries.
      const body = Readable.from(chunks, { objectMode: false, highWaterMark: 1 });
      return reply.send(body as unknown as string);
    },
  );
};
