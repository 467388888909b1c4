// A small parser of the Prometheus text exposition format (version 0.0.4),
// enough for the server page: samples with labels, HELP/TYPE comments
// skipped, escapes in label values decoded. And rates from counter deltas.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** parseProm parses exposition text into samples; malformed lines are skipped and counted. */
export function parseProm(text: string): { samples: Sample[]; skipped: number } {
  const samples: Sample[] = [];
  let skipped = 0;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const s = parseLine(line);
    if (s) samples.push(s);
    else skipped++;
  }
  return { samples, skipped };
}

function parseLine(line: string): Sample | null {
  let i = 0;
  while (i < line.length && /[A-Za-z0-9_:]/.test(line[i])) i++;
  const name = line.slice(0, i);
  if (!name || /^[0-9]/.test(name)) return null;
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i++;
    for (;;) {
      while (line[i] === " " || line[i] === ",") i++;
      if (line[i] === "}") { i++; break; }
      const start = i;
      while (i < line.length && /[A-Za-z0-9_]/.test(line[i])) i++;
      const key = line.slice(start, i);
      if (!key || line[i] !== "=" || line[i + 1] !== '"') return null;
      i += 2;
      let value = "";
      for (;;) {
        if (i >= line.length) return null;
        const c = line[i];
        if (c === "\\") {
          const n = line[i + 1];
          value += n === "n" ? "\n" : n;
          i += 2;
          continue;
        }
        if (c === '"') { i++; break; }
        value += c;
        i++;
      }
      labels[key] = value;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest[0] === "") return null;
  const value = parseValue(rest[0]);
  if (value === null) return null;
  return { name, labels, value };
}

function parseValue(s: string): number | null {
  if (s === "+Inf" || s === "Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (s === "NaN") return NaN;
  const v = Number(s);
  return Number.isNaN(v) ? null : v;
}

/** sum adds the samples named name whose labels include every pair of match. */
export function sum(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

/**
 * rate is the per-second increase of a counter between two scrapes taken
 * dtSeconds apart; a counter that went down was reset (the server
 * restarted), so the rate counts from zero, as Prometheus does.
 */
export function rate(prev: number, cur: number, dtSeconds: number): number {
  if (!(dtSeconds > 0)) return 0;
  const delta = cur >= prev ? cur - prev : cur;
  return delta / dtSeconds;
}
