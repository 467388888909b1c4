// The context text of a pack split into plain text and [cite:N] markers,
// so that each marker can be a button; and the evidence line of a cite.

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
