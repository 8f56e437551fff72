/** The variables a configuration is read from (`process.env`, or a test's own). */
export type Env = Record<string, string | undefined>;

export const MiB = 1024 * 1024;

/**
 * Reads settings from the environment, each by name with its bounds, and collects every problem
 * (`problems`) instead of stopping at the first, so a start-up names all of them at once.
 */
export class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string): string | undefined {
    return this.raw(name);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${value}")`);
      return fallback;
    }
    return Number(value);
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name)?.toLowerCase();
    if (value === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(value)) return true;
    if (['0', 'false', 'no', 'off'].includes(value)) return false;
    this.problems.push(`${name} must be true or false (got "${value}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const match = allowed.find((a) => a.toLowerCase() === value.toLowerCase());
    if (match === undefined) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
      return fallback;
    }
    return match;
  }

  date(name: string): Date | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const date = new Date(value);
    if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) {
      this.problems.push(`${name} must be a date such as 2027-06-30 (got "${value}")`);
      return undefined;
    }
    return date;
  }

  list(name: string): string[] {
    const value = this.raw(name);
    return value === undefined
      ? []
      : value
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  }

  url(name: string, protocols: string[]): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
      return value;
    } catch {
      this.problems.push(`${name} must be a ${protocols.map((p) => `${p}//`).join(' or ')} URL`);
      return undefined;
    }
  }
}
