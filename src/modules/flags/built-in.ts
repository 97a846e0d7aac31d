import type { FlagType } from './evaluate.ts';

/**
 * The flags the platform itself reads (through `FlagsService.enabled`). Each exists in every
 * workspace with this type and default until the workspace stores its own definition; its
 * type is fixed, so code reading it never meets a value of another type.
 */
export const BUILT_IN_FLAGS = {
  'search.keyword_only': {
    type: 'boolean',
    default: false,
    description:
      'POST /api/documents/search ranks by keywords only (BM25), whatever mode is asked: no query is embedded',
  },
} as const satisfies Record<string, { type: FlagType; default: unknown; description: string }>;

export type BuiltInFlag = keyof typeof BUILT_IN_FLAGS;

export const isBuiltIn = (key: string): key is BuiltInFlag => Object.hasOwn(BUILT_IN_FLAGS, key);
