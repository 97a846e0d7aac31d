import type { Schemas } from '../../api/client.ts';
import { Badge } from '../../ui/Badge.tsx';

export type Playbook = Schemas['Playbook'];
export type Category = NonNullable<Playbook['category']>;

/** The spec's six categories, in its order. */
export const CATEGORIES: readonly Category[] = [
  'Security & Compliance',
  'Code Review & Quality',
  'Data Analysis',
  'Infrastructure & DevOps',
  'Documentation',
  'Testing & QA',
];

export const BAND_WORDS: Record<Playbook['confidence_band'], string> = {
  high: 'High (over 90 %)',
  medium: 'Medium (70–90 %)',
  low: 'Low (under 70 %)',
};

const BAND_TONE = { high: 'ok', medium: 'warn', low: 'bad' } as const;

/** The confidence in percent and its band, in words. */
export function ConfidenceBadge({ playbook }: { playbook: Playbook }) {
  return (
    <span className="confidence">
      {playbook.confidence_percent} %{' '}
      <Badge value={playbook.confidence_band} tone={BAND_TONE[playbook.confidence_band]} />
    </span>
  );
}
