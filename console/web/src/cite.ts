// The context text of a pack split into plain text and [cite:N] markers,
// so that each marker can be a button; the evidence line of a cite, and
// its head (date, time, speaker).

export type Piece = { text: string } | { cite: number };

const marker = /\[cite:(\d+)\]/g;

/** splitCites splits text at every [cite:N] marker, in order. */
export function splitCites(text: string): Piece[] {
  const out: Piece[] = [];
  let last = 0;
  for (const m of text.matchAll(marker)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ text: text.slice(last, at) });
    out.push({ cite: Number(m[1]) });
    last = at + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  return out;
}

/**
 * evidenceLine returns the span text of cite n: the evidence line that
 * starts with "[cite:n] " (docs/pack.md: one line per span), or "" when
 * the text has none (conflict lines only mention cites).
 */
export function evidenceLine(text: string, n: number): string {
  const prefix = `[cite:${n}] `;
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) return line.slice(prefix.length);
  }
  return "";
}

/** Head is what an evidence line says before the span text. */
export interface Head {
  date: string; // YYYY-MM-DD (UTC)
  time: string; // HH:MM, or "" for a date-only timestamp
  speaker: string; // the name before ": " (a turn's speaker, or the actor or type the server wrote), or ""
  text: string; // the rest of the line
}

const head = /^(\d{4,}-\d{2}-\d{2})(?: (\d{2}:\d{2}))? /;

/**
 * splitHead splits an evidence line (without its "[cite:N] ") into its
 * head and text: docs/pack.md § Layout, "<date> [<time> ][<speaker>: ]<text>".
 * The speaker is what comes before the first ": " when it is short (at most
 * 48 characters, no sentence punctuation), as names are; otherwise "".
 * A line without a date (a pack from an older server) is all text.
 */
export function splitHead(line: string): Head {
  const m = head.exec(line);
  if (!m) return { date: "", time: "", speaker: "", text: line };
  const rest = line.slice(m[0].length);
  const colon = rest.indexOf(": ");
  const name = colon > 0 && colon <= 48 ? rest.slice(0, colon) : "";
  const speaker = /^[^.!?:;,()[\]{}"]+$/.test(name) ? name : "";
  return { date: m[1]!, time: m[2] ?? "", speaker, text: speaker ? rest.slice(colon + 2) : rest };
}
