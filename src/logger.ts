import pino, { type Logger, type LoggerOptions, stdSerializers } from 'pino';
import { redactDatabaseError } from './db/errors.ts';

export type { Logger } from 'pino';

/** Paths in logged data that may hold secrets; pino replaces their values. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.password',
  '*.token',
  '*.key',
  '*.secret',
];

/**
 * The one logging policy of the service, for Fastify's request logger and for the parts that
 * run outside requests (Redis, the job queue, workers): secrets redacted, and every logged
 * error through a serializer that drops a failed statement's parameter values.
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: (error: Error) => stdSerializers.err(redactDatabaseError(error) as Error) },
  };
}

/** A logger for the process's long-lived parts; `stream` lets tests read what it wrote. */
export function createLogger(level: string, stream?: NodeJS.WritableStream): Logger {
  return stream ? pino(loggerOptions(level), stream) : pino(loggerOptions(level));
}
