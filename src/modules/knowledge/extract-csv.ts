import type { Options } from 'csv-parse';
import { CsvError, parse } from 'csv-parse/sync';
import { type ContentBlock, ExtractionError } from './document.ts';

/**
 * CSV and TSV through csv-parse (RFC 4180 quoting, quoted line breaks, ragged rows tolerated).
 *
 * The first row is the header. Every other row becomes one line that names its columns,
 * `name: Ada | born: 1815 | field: mathematics` (empty cells left out), so any run of lines the
 * chunker cuts from the table still says what each value is: the header travels with every
 * group of rows. All rows form one table block, which the chunker splits at row boundaries.
 * The delimiter is a tab for `.tsv`; otherwise the one of `,` `;` tab `|` that splits the first
 * lines into the most columns, the same number on every line.
 */

export interface CsvDocument {
  blocks: ContentBlock[];
  metadata: { rows: number; columns: number; delimiter: string };
}

const DELIMITERS: { char: string; name: string }[] = [
  { char: ',', name: 'comma' },
  { char: ';', name: 'semicolon' },
  { char: '\t', name: 'tab' },
  { char: '|', name: 'pipe' },
];
const SNIFF_CHARS = 64 * 1024;
const SNIFF_ROWS = 50;

/** How well a delimiter splits the sample: its column count when every row agrees, else 0. */
function delimiterScore(sample: string, delimiter: string): number {
  try {
    const rows: string[][] = parse(sample, {
      delimiter,
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
      to_line: SNIFF_ROWS,
    });
    const counts = new Set(rows.map((row) => row.length));
    const [columns] = counts;
    return counts.size === 1 && columns !== undefined && columns > 1 ? columns : 0;
  } catch {
    return 0;
  }
}

function chooseDelimiter(text: string, extension: string): { char: string; name: string } {
  const tab = DELIMITERS[2] as { char: string; name: string };
  if (extension === 'tsv') return tab;
  const cut = text.length > SNIFF_CHARS ? text.lastIndexOf('\n', SNIFF_CHARS) : text.length;
  const sample = text.slice(0, cut > 0 ? cut : SNIFF_CHARS);
  let best = DELIMITERS[0] as { char: string; name: string };
  let bestScore = 0;
  for (const candidate of DELIMITERS) {
    const score = delimiterScore(sample, candidate.char);
    if (score > bestScore) [best, bestScore] = [candidate, score];
  }
  return best;
}

/** The table block of a CSV text; `displayName` names the file in messages. */
export function extractCsv(text: string, displayName: string, extension: string): CsvDocument {
  const delimiter = chooseDelimiter(text, extension);
  let header: string[] | undefined;
  let rows = 0;
  let columns = 0;
  const renderRow = (record: string[]): string | null => {
    columns = Math.max(columns, record.length);
    if (header === undefined) {
      header = record.map((name, index) => name.trim() || `column ${index + 1}`);
      return null;
    }
    rows += 1;
    const pairs = record
      .map((value, index) => [header?.[index] ?? `column ${index + 1}`, value.trim()] as const)
      .filter(([, value]) => value !== '')
      .map(([name, value]) => `${name}: ${value.replace(/\s+/g, ' ')}`);
    return pairs.length > 0 ? pairs.join(' | ') : null;
  };
  let lines: string[];
  try {
    const options: Options<string, string[]> = {
      delimiter: delimiter.char,
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
      on_record: renderRow,
    };
    // on_record turns each record into its rendered line, so the result is lines, not records.
    lines = parse(text, options as unknown as Options) as unknown as string[];
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    throw new ExtractionError('corrupt', `${displayName} is not valid CSV: ${error.message}`, {
      cause: error,
    });
  }
  const columnNames = header ?? [];
  const blocks: ContentBlock[] =
    lines.length > 0
      ? [{ kind: 'table', text: lines.join('\n'), headerRows: 0 }]
      : [{ kind: 'table', text: columnNames.join(' | '), headerRows: 0 }];
  return { blocks, metadata: { rows, columns, delimiter: delimiter.name } };
}
