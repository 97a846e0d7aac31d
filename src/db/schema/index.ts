/**
 * The whole database schema, one file per module (each table beside the TypeBox types of
 * its enum and JSON columns). drizzle-kit and the database client read it from here.
 */
export * from './activity.ts';
export * from './agents.ts';
export * from './analytics.ts';
export * from './audit.ts';
export * from './chat.ts';
export * from './codegraph.ts';
export * from './cors.ts';
export * from './credentials.ts';
export * from './flags.ts';
export * from './knowledge.ts';
export * from './playbooks.ts';
export * from './policies.ts';
export * from './retrieval.ts';
export * from './runs.ts';
export * from './settings.ts';
export * from './system.ts';
export * from './workflows.ts';
export * from './workspaces.ts';
