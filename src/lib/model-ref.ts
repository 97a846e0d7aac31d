import { type Static, Type } from 'typebox';
import { component } from './typebox.ts';

/**
 * A model, named by its provider and the provider's model name: an agent's model, a workspace's
 * and a tenant's default model, the providers' fallback order, a policy's model. Lives in lib/
 * so the database schema (column types), the HTTP schemas and the services share one
 * declaration (services import no db/ file).
 */
export const ModelRefSchema = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 100, description: 'for example openai, anthropic' }),
    name: Type.String({ minLength: 1, maxLength: 255, description: 'the provider’s model name' }),
  },
  { additionalProperties: false, ...component('ModelRef') },
);
export type ModelRef = Static<typeof ModelRefSchema>;
