import { createRequire } from 'node:module';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';

type FastifyValidationResult = ReturnType<FastifySchemaCompiler<unknown>>;
type SerializerFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;

/**
 * The response serializer factory Fastify uses by default (fast-json-stringify through
 * @fastify/fast-json-stringify-compiler), loaded from Fastify's own dependencies so it is the
 * very one Fastify would pick.
 */
let defaultSerializerFactory: SerializerFactory | undefined;
const fastifySerializerFactory = (): SerializerFactory => {
  if (!defaultSerializerFactory) {
    const fromFastify = createRequire(import.meta.resolve('fastify'));
    const { SerializerSelector } = fromFastify('@fastify/fast-json-stringify-compiler') as {
      SerializerSelector: () => SerializerFactory;
    };
    defaultSerializerFactory = SerializerSelector();
  }
  return defaultSerializerFactory;
};

/** What Ajv compiles: a function that leaves its last errors on itself (and has a `schemaEnv`). */
type Validator = FastifyValidationResult & { schemaEnv?: unknown };

/** Route schemas whose compilation waits for their first use, and the way to compile them all now. */
export interface LazyCompilers {
  /** Wraps a validator compiler: each validator is compiled on the first request it checks. */
  validatorCompiler(compile: FastifySchemaCompiler<unknown>): FastifySchemaCompiler<unknown>;
  /** Fastify's `schemaController.compilersFactory.buildSerializer`, each serializer compiled on first use. */
  buildSerializer: SerializerFactory;
  /** Compiles every schema not compiled yet; returns how many it compiled. */
  compilePending(): number;
}

/**
 * Fastify compiles every route's Ajv validators and fast-json-stringify serializers when the
 * application gets ready: ~1.7 s of CPU and ~20 MB of heap for this API's ~110 operations (a
 * validator per request part, a serializer per response status), most of a warm start
 * (bench/RESULTS.md, "Start-up and memory, round 2"). These compilers hand Fastify a function that
 * compiles its schema on its first call instead, so a start compiles none and a route pays for its
 * own schemas on its first request. The compiled functions are the ones Fastify would have made
 * (same compilers, same options), so validation, coercion, defaults and serialization do not
 * change. A schema that cannot compile would now fail its route's first request rather than the
 * start: `compilePending()` compiles them all, and a test runs it on the whole API.
 */
export function createLazyCompilers(): LazyCompilers {
  const pending = new Set<() => unknown>();

  const lazily = <Fn extends (...args: never[]) => unknown>(compile: () => Fn) => {
    let compiled: Fn | undefined;
    const get = (): Fn => {
      if (!compiled) {
        compiled = compile();
        pending.delete(get);
      }
      return compiled;
    };
    pending.add(get);
    return get;
  };

  return {
    validatorCompiler(compile) {
      return (routeSchema) => {
        const get = lazily(() => compile(routeSchema) as Validator);
        const validate: Validator = (...args: Parameters<FastifyValidationResult>) => {
          const compiled = get();
          // Ajv's validators take (data, context); Fastify's type names only the first.
          const result = (compiled as (...all: unknown[]) => ReturnType<FastifyValidationResult>)(...args);
          validate.errors = compiled.errors;
          return result;
        };
        // Fastify passes the request as the value's parent only to a function that has Ajv's
        // `schemaEnv` (fastify/lib/validation.js), so that Ajv may replace a coerced root
        // value: the compiled validator gets the same arguments Fastify would have passed it.
        validate.schemaEnv = true;
        return validate;
      };
    },
    buildSerializer(externalSchemas, options) {
      const compile = fastifySerializerFactory()(externalSchemas, options);
      return (routeSchema) => {
        const get = lazily(() => compile(routeSchema));
        return (data: unknown) => get()(data);
      };
    },
    compilePending() {
      let count = 0;
      for (const get of [...pending]) {
        get();
        count++;
      }
      return count;
    },
  };
}
