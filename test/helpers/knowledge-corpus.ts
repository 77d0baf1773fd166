/**
 * A test corpus for knowledge search with known answers (issue 38, "Retrieval quality"): fictional
 * products, staff and policies, generated deterministically from a seed (no Math.random), in plain
 * text and Markdown with headings and tables, and queries that each name the document answering them
 * and the answer's text in it.
 *
 * Two kinds of query, so hybrid search can be judged against lexical and vector search alone:
 * - `lexical`: the query names the document's rare term (a product's or a policy's invented name),
 *   which no other document contains;
 * - `paraphrase`: the query says what the document says in other words (CORPUS_SYNONYMS: "Who is in
 *   charge of purchasing at the port location?" for "... leads the procurement team at the harbour
 *   office"), sharing none of its content words, so lexical search alone misses it. An embedding
 *   that knows the synonyms (a fixture that maps each group to one direction) finds it.
 */

export interface CorpusDocument {
  id: string;
  title: string;
  mediaType: 'text/plain' | 'text/markdown';
  text: string;
}

export interface CorpusQuery {
  query: string;
  /** The document that answers the query. */
  documentId: string;
  /** The answer, as it occurs in that document's text. */
  answer: string;
  kind: 'lexical' | 'paraphrase';
}

/**
 * Groups of words and phrases with one meaning: the first as documents say it, the rest as
 * paraphrased queries say it.
 */
export const CORPUS_SYNONYMS: ReadonlyArray<readonly [string, ...string[]]> = [
  ['leads', 'in charge of'],
  ['team', 'unit'],
  ['office', 'location'],
  ['procurement', 'purchasing'],
  ['recruitment', 'hiring'],
  ['logistics', 'freight'],
  ['accounting', 'bookkeeping'],
  ['marketing', 'advertising'],
  ['maintenance', 'repairs'],
  ['training', 'coaching'],
  ['security', 'guarding'],
  ['payroll', 'wages'],
  ['catering', 'canteen'],
  ['cleaning', 'janitorial'],
  ['translation', 'interpreting'],
  ['harbour', 'port'],
  ['airport', 'airfield'],
  ['mountain', 'alpine'],
  ['seaside', 'coastal'],
  ['countryside', 'rural'],
  ['university', 'campus'],
  ['hospital', 'clinic'],
  ['factory', 'plant'],
  ['suburban', 'outskirts'],
  ['lakeside', 'lakefront'],
  ['island', 'isle'],
  ['downtown', 'midtown'],
];

const DEPARTMENTS = CORPUS_SYNONYMS.slice(3, 15);
const SITES = CORPUS_SYNONYMS.slice(15);

const SYLLABLES = [
  'zel',
  'brin',
  'kor',
  'vath',
  'quen',
  'dor',
  'lix',
  'tov',
  'sen',
  'rud',
  'pha',
  'gri',
  'nol',
  'tesh',
  'yun',
  'bax',
  'cri',
  'fen',
  'gor',
  'hul',
  'jin',
  'kep',
  'lom',
  'nax',
  'pil',
  'qua',
  'rix',
  'sul',
  'tam',
  'urk',
  'vel',
  'wyn',
  'xar',
  'yor',
  'zim',
  'oth',
  'ael',
  'ist',
];
const CATEGORIES = [
  'kettle',
  'drone',
  'bicycle',
  'lamp',
  'blender',
  'speaker',
  'heater',
  'camera',
  'router',
  'backpack',
  'scooter',
  'projector',
];
const COLOURS = ['red', 'teal', 'amber', 'graphite', 'ivory', 'olive', 'navy', 'coral'];
const REGIONS = ['Europe', 'Asia', 'Africa', 'Oceania', 'the Americas'];
const FILLER = [
  'Customers often ask whether it is sold in other regions.',
  'The design was revised twice after early feedback.',
  'Spare parts are listed in the appendix of the manual.',
  'Reviews praise its build quality and quiet operation.',
  'A newer model is planned but has not been announced.',
  'The packaging is made from recycled cardboard.',
  'Support articles cover the most common questions.',
  'Its name comes from an old word for a river stone.',
];

/** mulberry32: a small, fast PRNG whose sequence depends only on its seed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function knowledgeCorpus(options: { documents: number; seed: number }): { documents: CorpusDocument[]; queries: CorpusQuery[] } {
  // Invented names are drawn from 38 syllables without repeats; far past this the draws would crawl.
  if (!Number.isInteger(options.documents) || options.documents < 1 || options.documents > 20_000) {
    throw new RangeError('documents must be an integer from 1 to 20,000');
  }
  const random = prng(options.seed);
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const used = new Set<string>();
  /** An invented word of 2 or 3 syllables, never given twice in one corpus. */
  const name = (syllables: number): string => {
    for (;;) {
      const word = Array.from({ length: syllables }, () => pick(SYLLABLES)).join('');
      const capitalized = word[0]!.toUpperCase() + word.slice(1);
      if (!used.has(word)) {
        used.add(word);
        return capitalized;
      }
    }
  };
  const makers = Array.from({ length: 20 }, () => name(2));
  // Every department at every site once, in a seeded order: a paraphrased query matches one document.
  const staffSlots = DEPARTMENTS.flatMap((department) => SITES.map((site) => ({ department, site })));
  for (let index = staffSlots.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [staffSlots[index], staffSlots[other]] = [staffSlots[other]!, staffSlots[index]!];
  }

  const documents: CorpusDocument[] = [];
  const queries: CorpusQuery[] = [];
  const width = String(options.documents).length;
  for (let index = 0; index < options.documents; index++) {
    const id = `doc-${String(index + 1).padStart(width, '0')}`;
    const roll = random();
    const markdown = random() < 0.6;
    if (roll < 0.25 && staffSlots.length > 0) {
      const { department, site } = staffSlots.pop()!;
      const person = `${name(2)} ${name(3)}`;
      const year = int(1998, 2024);
      const extension = int(1000, 9999);
      const facts = `${person} leads the ${department[0]} team at the ${site[0]} office. ${person} joined in ${year} and answers on extension ${extension}.`;
      const title = person;
      const text = markdown
        ? `# ${person}\n\n## Role\n\n${facts}\n\n## Contact\n\nExtension ${extension}, weekdays.\n`
        : `${person}\n\n${facts}\n`;
      documents.push({ id, title, mediaType: markdown ? 'text/markdown' : 'text/plain', text });
      queries.push({
        query: `Who is in charge of ${department[1]} at the ${site[1]} location?`,
        documentId: id,
        answer: person,
        kind: 'paraphrase',
      });
    } else if (roll < 0.65) {
      const product = name(3);
      const category = pick(CATEGORIES);
      const maker = pick(makers);
      const months = int(6, 60);
      const weight = `${int(1, 40)}.${int(0, 9)} kg`;
      const colour = pick(COLOURS);
      const hours = int(2, 48);
      const firstFiller = int(0, FILLER.length - 1);
      const filler = [FILLER[firstFiller]!, FILLER[(firstFiller + int(1, FILLER.length - 1)) % FILLER.length]!];
      const title = `The ${product} ${category}`;
      const text = markdown
        ? `# ${title}\n\nThe ${product} is a ${category} made by ${maker} since ${int(2005, 2025)}. ${filler[0]}\n\n## Warranty\n\nThe ${product} warranty lasts ${months} months from the date of purchase. ${filler[1]}\n\n## Specifications\n\n| Property | Value |\n|---|---|\n| Weight | ${weight} |\n| Colour | ${colour} |\n| Battery life | ${hours} hours |\n`
        : `${title}\n\nThe ${product} is ${/^[aeiou]/.test(colour) ? 'an' : 'a'} ${colour} ${category} made by ${maker}. It weighs ${weight} and its battery lasts ${hours} hours. ${filler[0]}\n\nThe ${product} warranty lasts ${months} months from the date of purchase. ${filler[1]}\n`;
      documents.push({ id, title, mediaType: markdown ? 'text/markdown' : 'text/plain', text });
      queries.push(
        random() < 0.5
          ? { query: `How long does the ${product} warranty last?`, documentId: id, answer: `${months} months`, kind: 'lexical' }
          : { query: `How much does the ${product} weigh?`, documentId: id, answer: weight, kind: 'lexical' },
      );
    } else {
      const policy = name(3);
      const days = int(5, 90);
      const limits = REGIONS.map((region) => ({ region, amount: `${int(10, 99) * 10} EUR` }));
      const asked = pick(limits);
      const title = `${policy} expense policy`;
      const table = `| Region | Daily limit |\n|---|---|\n${limits.map((limit) => `| ${limit.region} | ${limit.amount} |`).join('\n')}`;
      const text = markdown
        ? `# ${title}\n\nThe ${policy} policy covers travel booked by staff. Claims must be filed within ${days} days of the trip.\n\n## Limits\n\n${table}\n\n## Exceptions\n\nExceptions need written approval before the trip.\n`
        : `${title}\n\nThe ${policy} policy covers travel booked by staff. Claims must be filed within ${days} days of the trip.\n\nDaily limits: ${limits.map((limit) => `${limit.region} ${limit.amount}`).join('; ')}.\n`;
      documents.push({ id, title, mediaType: markdown ? 'text/markdown' : 'text/plain', text });
      queries.push(
        random() < 0.5
          ? { query: `Within how many days must ${policy} claims be filed?`, documentId: id, answer: `${days} days`, kind: 'lexical' }
          : {
              query: `What is the daily limit of the ${policy} policy in ${asked.region}?`,
              documentId: id,
              answer: asked.amount,
              kind: 'lexical',
            },
      );
    }
  }
  return { documents, queries };
}
