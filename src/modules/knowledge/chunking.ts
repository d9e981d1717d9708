import { sentenceSegments } from '../../platform/sentences.ts';

export interface ChunkOptions {
  maxChars: number;
  overlapChars: number;
}

const DEFAULT_OPTIONS: ChunkOptions = { maxChars: 700, overlapChars: 200 };

const HEADING_LINE = /^(#{1,6})[ \t]+(\S.*)$/;
const PATH_SEPARATOR = ' › ';

interface Section {
  headingPath: string[];
  body: string;
}

/** A sentence, or a piece of one too long for a chunk, with the break that followed it in the text. */
interface Unit {
  text: string;
  separator: ' ' | '\n' | '\n\n';
}

/**
 * Splits extracted text into overlapping chunks along heading and sentence boundaries. Every
 * chunk starts with its heading path so it stands alone, holds whole sentences up to `maxChars`
 * (a longer sentence is split between words) and, within a section, repeats the previous chunk's
 * trailing sentences up to `overlapChars`.
 */
export function chunkText(text: string, options: Partial<ChunkOptions> = {}): string[] {
  const maxChars = options.maxChars ?? DEFAULT_OPTIONS.maxChars;
  const overlapChars = options.overlapChars ?? DEFAULT_OPTIONS.overlapChars;
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError(`maxChars must be a positive integer, not ${maxChars}.`);
  if (!Number.isInteger(overlapChars) || overlapChars < 0 || overlapChars >= maxChars) {
    throw new RangeError(`overlapChars must be an integer from 0 to maxChars - 1, not ${overlapChars}.`);
  }
  return sections(text).flatMap((section) => sectionChunks(section, maxChars, overlapChars));
}

/** The text between headings, each part under the path of headings that encloses it; parts without a body are left out. */
function sections(text: string): Section[] {
  const found: Section[] = [];
  const openHeadings: { level: number; title: string }[] = [];
  let bodyLines: string[] = [];
  const closeSection = () => {
    const body = bodyLines.join('\n').trim();
    if (body !== '') found.push({ headingPath: openHeadings.map((heading) => heading.title), body });
    bodyLines = [];
  };
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    const heading = HEADING_LINE.exec(line.trim());
    if (!heading) {
      bodyLines.push(line);
      continue;
    }
    closeSection();
    const level = heading[1]!.length;
    while (openHeadings.length > 0 && openHeadings.at(-1)!.level >= level) openHeadings.pop();
    openHeadings.push({ level, title: heading[2]! });
  }
  closeSection();
  return found;
}

function sectionChunks(section: Section, maxChars: number, overlapChars: number): string[] {
  const prefix = headingPrefix(section.headingPath, Math.floor(maxChars / 2));
  const budget = maxChars - prefix.length;
  const render = (units: Unit[]) => prefix + joinUnits(units);
  const fits = (units: Unit[]) => joinUnits(units).length <= budget;

  const chunks: string[] = [];
  let window: Unit[] = [];
  for (const unit of sentenceUnits(section.body, budget)) {
    if (window.length > 0 && !fits([...window, unit])) {
      chunks.push(render(window));
      window = overlapTail(window, overlapChars);
      while (window.length > 0 && !fits([...window, unit])) window.shift();
    }
    window.push(unit);
  }
  if (window.length > 0) chunks.push(render(window));
  return chunks;
}

/**
 * The heading path as the chunk's first line. A path longer than `limit` is cut short so that
 * even deeply nested sections leave room for their text.
 */
function headingPrefix(headingPath: string[], limit: number): string {
  if (headingPath.length === 0) return '';
  const path = headingPath.join(PATH_SEPARATOR);
  if (path.length + 1 <= limit) return `${path}\n`;
  if (limit < 2) return '';
  return `${path.slice(0, limit - 2).trimEnd()}…\n`;
}

/** The longest run of trailing units whose text fits within `overlapChars`. */
function overlapTail(units: Unit[], overlapChars: number): Unit[] {
  let start = units.length;
  while (start > 0 && joinUnits(units.slice(start - 1)).length <= overlapChars) start--;
  return units.slice(start);
}

function joinUnits(units: Unit[]): string {
  return units.map((unit, index) => (index === units.length - 1 ? unit.text : unit.text + unit.separator)).join('');
}

/** The body's sentences in order, each no longer than `budget` characters. */
function sentenceUnits(body: string, budget: number): Unit[] {
  const units: Unit[] = [];
  for (const paragraph of body.split(/\n\s*\n/)) {
    for (const segment of sentenceSegments(paragraph.trim())) {
      const sentence = segment.trim();
      if (sentence === '') continue;
      const separator = segment.includes('\n') ? '\n' : ' ';
      const pieces = sentence.length <= budget ? [sentence] : splitBetweenWords(sentence, budget);
      pieces.forEach((text, index) => units.push({ text, separator: index === pieces.length - 1 ? separator : ' ' }));
    }
    if (units.length > 0) units.at(-1)!.separator = '\n\n';
  }
  return units;
}

/** Pieces of at most `budget` characters, broken between words; a word longer than that is cut. */
function splitBetweenWords(sentence: string, budget: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const word of sentence.split(/\s+/)) {
    for (let start = 0; start < word.length; start += budget) {
      const part = word.slice(start, start + budget);
      if (piece === '') piece = part;
      else if (piece.length + 1 + part.length <= budget) piece += ` ${part}`;
      else {
        pieces.push(piece);
        piece = part;
      }
    }
  }
  if (piece !== '') pieces.push(piece);
  return pieces;
}
