import { go } from './go.ts';
import { java } from './java.ts';
import type { LanguageSpec } from './language-spec.ts';
import { python } from './python.ts';
import type { LanguageId } from './types.ts';
import { javascript, tsx, typescript } from './typescript.ts';

/** Every language the code graph reads. */
export const LANGUAGES: readonly LanguageSpec[] = [typescript, tsx, javascript, python, go, java];

const byExtension = new Map(LANGUAGES.flatMap((spec) => spec.extensions.map((ext) => [ext, spec] as const)));

/** The language of a file by its name (`.d.ts` is TypeScript), or undefined when not read. */
export function languageOf(path: string): LanguageSpec | undefined {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? undefined : byExtension.get(path.slice(dot).toLowerCase());
}

export const languageById = (id: LanguageId): LanguageSpec =>
  LANGUAGES.find((spec) => spec.id === id) as LanguageSpec;
