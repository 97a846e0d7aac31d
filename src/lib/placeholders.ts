/**
 * The one `{{placeholder}}` grammar of the platform: a workflow's goal (filled from a run's
 * inputs), a policy section's text (from the assembly's variables), a credential type's test
 * endpoint and the http_request tool's authentication headers (from a credential's fields).
 *
 *   {{name}}  {{ name }}  {{a.b-c_1}}      a placeholder: braces, optional white space, a name
 *   name      letters, digits, `_`, `-` and `.` (a policy reads dots as a path)
 *   {{ }}  {{a b}}  {{a/b}}  {x}           not placeholders: left as they are
 *
 * There is no escape: text that must show `{{name}}` literally cannot. Filling is one pass
 * over the template, so a value that itself holds `{{name}}` is never filled again. What an
 * unknown name becomes (an error, an empty string, `***`) is the caller's choice.
 */

/** A placeholder's name, as a regular-expression source (unanchored). */
const PLACEHOLDER_NAME = '[A-Za-z0-9_.-]+';

/** A whole string that is a placeholder name: the `pattern` of a schema for names that fill one. */
export const PLACEHOLDER_NAME_PATTERN = `^${PLACEHOLDER_NAME}$`;

/** Global, hence stateful (`lastIndex`): used only by `matchAll` and `replace`, which reset it. */
const PLACEHOLDER = new RegExp(`\\{\\{\\s*(${PLACEHOLDER_NAME})\\s*\\}\\}`, 'g');

/** The placeholder names a text uses, each once, in order of first use. */
export function placeholdersOf(text: string): string[] {
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((match) => match[1] as string))];
}

/**
 * Replaces each placeholder of `template` by what `value` answers for its name; `offset` is
 * where the placeholder starts (0: it opens the template). `value` may throw to refuse a name.
 */
export function fillPlaceholders(template: string, value: (name: string, offset: number) => string): string {
  return template.replace(PLACEHOLDER, (_whole, name: string, offset: number) => value(name, offset));
}
