import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { infrastructureFailure } from './errors.ts';
import { registerAuth } from './http/auth.ts';
import { registerBodyDrain } from './http/body-drain.ts';
import { type ConsolePages, loadConsole } from './http/console.ts';
import { registerCors } from './http/cors.ts';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './http/error-handler.ts';
import { MAX_RAW_PARAM_LENGTH, registerInputGuard } from './http/input-guard.ts';
import { createLazyCompilers } from './http/lazy-compilers.ts';
import { createLiveStreams } from './http/live-streams.ts';
import { registerOpenApiConventions, swaggerOptions } from './http/openapi.ts';
import { registerPrometheus } from './http/prometheus.ts';
import { RequestLogController } from './http/request-log.ts';
import { ProblemSchema } from './http/schemas.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { runAsWorkStartedAt } from './lib/request-order.ts';
import { loggerOptions } from './logger.ts';
import { devJwksRoutes } from './modules/identity/identity.routes.ts';
import type { Services } from './services.ts';

export interface AppOptions {
  /** Where log lines go; standard output by default. Tests pass a stream to read them. */
  logStream?: NodeJS.WritableStream;
  /** The web console to serve at `/`: the built one in web/dist by default, none with `false`. */
  console?: ConsolePages | false;
  /**
   * Compile every route's validators and serializers when the app gets ready, as Fastify does
   * by default, instead of on each one's first use (http/lazy-compilers.ts). A test sets it to
   * prove every schema of the API compiles.
   */
  compileSchemasAtStart?: boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the Fastify application without listening, so tests can `inject()` into it. */
export async function buildApp(services: Services, options: AppOptions = {}) {
  const { config } = services;
  // Every logged error passes the policy's serializer: database errors lose their parameter values.
  const logger: FastifyServerOptions['logger'] = {
    ...loggerOptions(config.logLevel),
    ...(options.logStream ? { stream: options.logStream } : {}),
  };
  // Route schemas are compiled on first use, not at ready(): most of a warm start's CPU otherwise.
  const compilers = createLazyCompilers();
  const app = Fastify({
    logger,
    schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
    bodyLimit: config.bodyLimit,
    logController: new RequestLogController(),
    requestIdHeader: false,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `req-${randomUUID()}`;
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_RAW_PARAM_LENGTH },
    frameworkErrors: frameworkErrorHandler(config.bodyLimit),
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(compilers.validatorCompiler(createValidatorCompiler()));
  if (options.compileSchemasAtStart) {
    app.addHook('onReady', async () => {
      app.log.info({ schemas: compilers.compilePending() }, 'route schemas compiled');
    });
  }
  // The API speaks JSON only: anything else is 415 rather than a string body.
  app.removeContentTypeParser('text/plain');
  app.addSchema(ProblemSchema);
  const consolePages =
    options.console === false
      ? undefined
      : (options.console ??
        loadConsole({
          connectOrigins:
            config.auth.mode === 'oidc' && config.auth.consoleClientId
              ? [new URL(config.auth.issuer).origin]
              : [],
        }));
  registerErrorHandling(
    app,
    config.bodyLimit,
    (error) => infrastructureFailure(error) ?? error,
    consolePages,
  );

  // WebSocket upgrades run through the same hooks as any request (auth, input guard). First,
  // so its hook marks an upgrade before any other can refuse it: a refused upgrade is then
  // answered over HTTP and its socket closed. Client messages are small commands, so frames
  // are capped well below ws's 100 MiB.
  await app.register(websocket, { options: { maxPayload: 16 * 1024 } });
  // Everything a request does runs as work started at its arrival, so the PGlite gate
  // serves requests oldest first (lib/request-order.ts). A callback hook: the rest of the
  // request's life runs inside this context.
  app.addHook('onRequest', (_request, _reply, done) => runAsWorkStartedAt(performance.now(), done));
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Every answer, API or page: no content sniffing, no address leaking to other sites.
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
  });
  registerInputGuard(app);
  // An answer given before the body arrived (413, 401) waits for the rest of it, so the
  // client still writing reads the answer instead of a reset connection.
  registerBodyDrain(app);
  // Before authentication: preflights carry no credentials, and a 401 keeps its CORS headers.
  await registerCors(app, services.cors);
  registerAuth(app, {
    verifyToken: services.verifyToken,
    findMembership: services.workspaces.findMembership,
    resolveApiKey: services.workspaces.resolveApiKey,
    redeemTicket: services.activity.redeemTicket,
  });

  // Live streams (SSE, WebSocket): capped per user and workspace, ended when access is withdrawn.
  const streams = createLiveStreams({
    hub: services.eventHub,
    currentAccess: services.workspaces.currentAccess,
    perUser: config.streams.perUser,
    perWorkspace: config.streams.perWorkspace,
    log: app.log,
  });

  registerOpenApiConventions(app);
  await app.register(swagger, swaggerOptions(config.auth.mode));
  await app.register(swaggerUi, { routePrefix: '/docs' });

  registerPrometheus(app, { token: config.metricsToken, postings: services.retrieval.postings.usage });
  await consolePages?.register(app);
  if (services.devJwks) await app.register(devJwksRoutes, { jwks: services.devJwks });
  // Each module's routes, in the order of `services.routes`: one encapsulated plugin per module.
  await app.register(
    async (api) => {
      for (const routes of services.routes) await api.register(routes, { streams });
    },
    { prefix: '/api' },
  );
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
