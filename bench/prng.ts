// The benchmark's seeded generator: the scale set (bench/scale/generate.ts) and the import-path set
// (bench/imported/generate.ts) are made from it, so each is the same from the same seed.

/** mulberry32: a fast PRNG, fixed by its seed. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const hex8 = () => (Math.floor(next() * 4294967296) >>> 0).toString(16).padStart(8, '0');
  /** A version-4 UUID, as the server's randomUUID() makes (random, so indexes see random keys). */
  const uuid = () => {
    const a1 = hex8();
    const b1 = hex8();
    const c1 = hex8();
    const d1 = hex8();
    return `${a1}-${b1.slice(0, 4)}-4${b1.slice(5, 8)}-${'89ab'[Math.floor(next() * 4)]}${c1.slice(1, 4)}-${c1.slice(4, 8)}${d1}`;
  };
  return { next, uuid, int: (n: number) => Math.floor(next() * n) };
}
