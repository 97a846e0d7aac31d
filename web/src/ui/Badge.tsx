type Tone = 'ok' | 'warn' | 'bad' | 'info' | 'neutral';

const TONES: Record<string, Tone> = {
  Completed: 'ok',
  Active: 'ok',
  Operational: 'ok',
  operational: 'ok',
  healthy: 'ok',
  processed: 'ok',
  normal: 'ok',
  optimal: 'ok',
  high: 'ok',
  Running: 'info',
  Busy: 'info',
  Queued: 'neutral',
  Idle: 'neutral',
  Paused: 'warn',
  Degraded: 'warn',
  degraded: 'warn',
  busy: 'warn',
  medium: 'warn',
  under: 'warn',
  processing: 'info',
  Failed: 'bad',
  Error: 'bad',
  Down: 'bad',
  down: 'bad',
  failed: 'bad',
  overloaded: 'bad',
  over: 'bad',
  low: 'bad',
  Cancelled: 'neutral',
};

/** A status in words and colour; the word carries the meaning, the colour only helps. */
export function Badge({ value, tone }: { value: string; tone?: Tone }) {
  return <span className={`badge ${tone ?? TONES[value] ?? 'neutral'}`}>{value}</span>;
}
