/**
 * Ranking a skill's references against a question, simply enough to explain in one line:
 *
 *   score(section) = Σ over terms t found in it: weight(t) × (1 + ln tf) × ln(1 + N / df)
 *
 * where the sections are the references split at Markdown headings (long sections further split at
 * paragraphs), tf counts t in the section (its heading counts twice), N is the number of sections and df
 * the number holding t. Terms of `query` weigh 1, terms only in `context` weigh 0.5. Terms are
 * lowercased words of two or more letters or digits, plurals folded to the singular, common English
 * words left out.
 */

const STOP_WORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by can
  could did do does doing down during each few for from further had has have having he her here hers herself him himself his how
  i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves out
  over own same she should so some such than that the their theirs them themselves then there these they this those through to
  too under until up very was we were what when where which while who whom why will with would you your yours yourself
  yourselves get got also use using used want need please`.split(/\s+/),
);

/** A plural folded to its singular (`discounts` -> `discount`, `policies` -> `policy`), so both match. */
function singular(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 3 && word.endsWith('s') && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 2 && !STOP_WORDS.has(w)).map(singular);
}

interface Section {
  reference: string;
  heading: string | null;
  text: string;
}

const SECTION_CHARS = 1500;

/** A reference cut into sections at its headings; long sections cut again at paragraph breaks. */
function sectionsOf(reference: string, content: string): Section[] {
  const out: Section[] = [];
  let heading: string | null = null;
  let lines: string[] = [];
  const flush = () => {
    const body = lines.join('\n').trim();
    lines = [];
    if (!body) return;
    let chunk = '';
    for (const para of body.split(/\n\s*\n/)) {
      if (chunk && chunk.length + para.length > SECTION_CHARS) {
        out.push({ reference, heading, text: chunk });
        chunk = '';
      }
      chunk = chunk ? `${chunk}\n\n${para}` : para;
    }
    if (chunk) out.push({ reference, heading, text: chunk });
  };
  let fenced = false;
  for (const line of content.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (m) {
      flush();
      heading = m[1].trim();
    }
    lines.push(line);
  }
  flush();
  return out;
}

export interface Match {
  reference: string;
  section: string | null;
  score: number;
  matchedTerms: string[];
  excerpt: string;
}

export function rankReferences(references: { name: string; content: string }[], query: string, context = '', limit = 5): Match[] {
  const weights = new Map<string, number>();
  for (const t of terms(context)) weights.set(t, 0.5);
  for (const t of terms(query)) weights.set(t, 1);
  if (!weights.size) return [];

  const sections = references.flatMap((r) => sectionsOf(r.name, r.content));
  const counted = sections.map((s) => {
    const tf = new Map<string, number>();
    for (const t of terms(s.text)) if (weights.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
    // The heading line is part of the text already; counting it once more makes it count twice.
    for (const t of terms(s.heading ?? '')) if (weights.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
    return tf;
  });
  const df = new Map<string, number>();
  for (const tf of counted) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);

  const n = sections.length;
  return sections
    .map((s, i) => {
      let score = 0;
      for (const [t, count] of counted[i]) score += weights.get(t)! * (1 + Math.log(count)) * Math.log(1 + n / df.get(t)!);
      return {
        reference: s.reference,
        section: s.heading,
        score: Math.round(score * 1000) / 1000,
        matchedTerms: [...counted[i].keys()].sort(),
        excerpt: s.text,
      };
    })
    .filter((m) => m.score > 0)
    .sort((a, b) => b.score - a.score || a.reference.localeCompare(b.reference))
    .slice(0, limit);
}
