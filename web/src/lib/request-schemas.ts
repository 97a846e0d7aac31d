import bodies from 'virtual:request-schemas';

/** A JSON Schema as openapi.json publishes it (the subset the console reads). */
export interface JsonSchema {
  type?: string | string[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
  default?: unknown;
}

/** The request body schema the API validates `operationId` against. */
export function requestSchema(operationId: string): JsonSchema | undefined {
  return (bodies as Record<string, JsonSchema>)[operationId];
}

/** The schema of one (possibly nested, dot-separated) field of a body, and whether it is required. */
export function fieldSchema(
  operationId: string,
  field: string,
): { schema: JsonSchema | undefined; required: boolean } {
  let schema = requestSchema(operationId);
  let required = false;
  for (const part of field.split('.')) {
    const object: JsonSchema | undefined = schema?.properties
      ? schema
      : schema?.anyOf?.find((branch) => branch.properties);
    required = object?.required?.includes(part) ?? false;
    schema = object?.properties?.[part];
  }
  return { schema, required };
}

/** HTML constraint attributes equal to what the schema says of a field (the browser checks them first). */
export function inputConstraints(operationId: string, field: string) {
  const { schema, required } = fieldSchema(operationId, field);
  const plain = schema?.anyOf?.find((branch) => branch.type !== 'null') ?? schema;
  return {
    required,
    ...(plain?.minLength !== undefined ? { minLength: plain.minLength } : {}),
    ...(plain?.maxLength !== undefined ? { maxLength: plain.maxLength } : {}),
    ...(plain?.minimum !== undefined ? { min: plain.minimum } : {}),
    ...(plain?.maximum !== undefined ? { max: plain.maximum } : {}),
  };
}
