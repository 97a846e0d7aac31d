/** A field of a credential type's secret data (an entry of `schema_definition`). */
export interface FieldDefinition {
  name: string;
  label: string;
  type: 'string' | 'password' | 'number' | 'boolean' | 'options' | 'hidden';
  required?: boolean;
  default?: unknown;
  options?: { value: string; label?: string }[];
  description?: string;
  placeholder?: string;
}

/** How a credential type is tested (`test_endpoint`). */
export interface TestEndpoint {
  kind: 'postgres' | 'redis' | 'http' | 'oauth2' | 'none';
  /** For http: the URL to GET; `{{field}}` placeholders are filled from the credential. */
  url?: string;
  /** For http: request headers, values with `{{field}}` placeholders. */
  headers?: Record<string, string>;
  /** For http: statuses that mean success (default 200). */
  expected_status?: number[];
}

export const FIELD_TYPES = ['string', 'password', 'number', 'boolean', 'options', 'hidden'] as const;
export const TEST_KINDS = ['postgres', 'redis', 'http', 'oauth2', 'none'] as const;
export const CREDENTIAL_CATEGORIES = ['database', 'ai', 'api', 'infrastructure'] as const;

/** Audit actions of spec section 6. */
export const AUDIT_ACTIONS = [
  'created',
  'updated',
  'deleted',
  'accessed',
  'access_denied',
  'access_failed',
  'tested',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
export type TestStatus = 'passed' | 'failed';
