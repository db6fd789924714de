/**
 * A small seeded PRNG (sfc32, seeded through cyrb128), so that a simulation
 * started with the same --seed makes the same choices: node IDs and secrets,
 * jitter, task durations, failures, which nodes a fault wave takes. Each
 * node and each allocation forks its own stream, so the order in which
 * network replies arrive does not shift another one's draws.
 */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string | number) {
    [this.a, this.b, this.c, this.d] = cyrb128(String(seed));
    // The first outputs of sfc32 are weakly mixed.
    for (let i = 0; i < 12; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Integer in [0, max). */
  int(max: number): number {
    return Math.floor(this.next() * max);
  }

  /** Uniform in [min, max]. */
  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  /** A random RFC 4122 version 4 UUID, from this stream. */
  uuid(): string {
    const hex: string[] = [];
    for (let i = 0; i < 4; i++) hex.push(((this.next() * 4294967296) >>> 0).toString(16).padStart(8, "0"));
    const h = hex.join("");
    const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }

  /** Fisher–Yates, in place; returns the array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }

  /** An independent stream named by `label`, derived from this one's seed material. */
  fork(label: string | number): Prng {
    return new Prng(this.forkSeed(label));
  }

  /** The seed `fork(label)` starts from: another thread makes the same stream with `new Prng(seed)`. */
  forkSeed(label: string | number): string {
    return `${this.a}:${this.b}:${this.c}:${this.d}/${label}`;
  }
}

/** Nomad's helper.RandomStagger: uniform in [0, ms). */
export function stagger(prng: Prng, ms: number): number {
  return ms > 0 ? prng.next() * ms : 0;
}

/** 128 bits of seed material from a string (bryc's cyrb128). */
function cyrb128(str: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < str.length; i++) {
    const k = str.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}
