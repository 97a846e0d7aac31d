/** Keys for a list whose values may repeat (an agent twice in a workflow): the value and its occurrence. */
export function keyedByOccurrence(
  values: readonly string[],
): { key: string; value: string; index: number }[] {
  const seen = new Map<string, number>();
  return values.map((value, index) => {
    const occurrence = (seen.get(value) ?? 0) + 1;
    seen.set(value, occurrence);
    return { key: `${value}#${occurrence}`, value, index };
  });
}
