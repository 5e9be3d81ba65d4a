// The arithmetic of the figures: rounding for the report, and the middle of a few measurements.

/** `n` rounded to `digits` decimals; null when it is not a finite number (a division by zero). */
export const round = (n: number, digits = 0): number | null =>
  Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null;

export const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** The nearest-rank percentile `p` (0–100) of `values`; null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
