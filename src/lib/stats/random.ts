/**
 * A small seeded random source for simulating experiments in tests and benchmarks
 * (mulberry32: 32-bit state, fast, and good enough for Monte Carlo checks of this size).
 * The same seed always gives the same sequence, so simulation tests are deterministic.
 */
export interface Random {
  /** Uniform in [0, 1). */
  uniform(): number;
  /** Standard normal (Box–Muller). */
  normal(): number;
  /** 1 with probability p, else 0. */
  bernoulli(p: number): number;
  /** exp(Normal(mu, sigma)). */
  lognormal(mu: number, sigma: number): number;
  /** Poisson(lambda) by inversion (small lambda only). */
  poisson(lambda: number): number;
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u = 1 - uniform(); // (0, 1]: log is finite
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
  return {
    uniform,
    normal,
    bernoulli: (p) => (uniform() < p ? 1 : 0),
    lognormal: (mu, sigma) => Math.exp(mu + sigma * normal()),
    poisson: (lambda) => {
      const limit = Math.exp(-lambda);
      let k = 0;
      let product = uniform();
      while (product > limit) {
        k++;
        product *= uniform();
      }
      return k;
    },
  };
}
