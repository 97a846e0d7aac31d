import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** A CSS variable of the stylesheet (`--accent`), read when drawing so both themes fit. */
  color: string;
}

// Axis and legend times in the browser's zone and locale: hours within a day, dates across days.
const hourLabel = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const fullLabel = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

const cssColor = (variable: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(variable).trim() || '#888';

/**
 * A time series drawn by uPlot: one line per series over `times` (ISO), the values of the
 * hovered time in the legend below it. A canvas says nothing to a screen reader: the chart is an
 * image named by `summary`, and the page shows the same numbers in a table.
 */
export function TimeChart({
  title,
  summary,
  times,
  series,
  format,
}: {
  title: string;
  summary: string;
  times: string[];
  series: ChartSeries[];
  format: (value: number) => string;
}) {
  const target = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = target.current;
    if (!element) return;
    const text = cssColor('--muted');
    const grid = cssColor('--border');
    const width = () => Math.max(280, element.clientWidth);
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const chart = new uPlot(
      {
        width: width(),
        height: 220,
        series: [
          {
            label: 'Time',
            value: (_self: uPlot, value: number | null) =>
              value === null ? '—' : fullLabel.format(value * 1000),
          },
          ...series.map((item) => ({
            label: item.label,
            stroke: cssColor(item.color),
            width: 2,
            points: { show: times.length < 60 },
            value: (_self: uPlot, value: number | null) => (value === null ? '—' : format(value)),
          })),
        ],
        axes: [
          {
            ...axis,
            values: (_self, ticks) => {
              const span = (ticks.at(-1) ?? 0) - (ticks[0] ?? 0);
              return ticks.map((tick) => (span <= 2 * 86_400 ? hourLabel : dayLabel).format(tick * 1000));
            },
          },
          { ...axis, size: 70, values: (_self, ticks) => ticks.map((tick) => format(tick)) },
        ],
        scales: { y: { range: (_self, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
        cursor: { drag: { x: false, y: false } },
      },
      [times.map((time) => new Date(time).getTime() / 1000), ...series.map((item) => item.values)],
      element,
    );
    const resize = new ResizeObserver(() => chart.setSize({ width: width(), height: 220 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [times, series, format]);

  return (
    <figure className="chart card">
      <figcaption>
        <h3>{title}</h3>
      </figcaption>
      <div ref={target} role="img" aria-label={`${title}: ${summary}`} />
    </figure>
  );
}
