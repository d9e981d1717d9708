/**
 * The contact of a simulated call: what they say, line by line, so a campaign can be rehearsed
 * offline with real agent replies. A contact's `metadata.simulate.say` (a list of lines) is their
 * script; else their campaign's `simulatorScript`; else they answer like someone picking up an
 * unexpected call.
 *
 * A line `words => reply` is a reaction: said once, when the agent's last words hold one of its
 * words or phrases (`|` between them, any case: `parking|garage => Thanks!`). Each time the
 * contact speaks, the first reaction that fits the agent's words is said; when none does, the next
 * plain line in order. The contact falls silent when neither is left.
 */
export const DEFAULT_PERSONA: readonly string[] = ['Hello?', 'Yes, speaking. What is this about?'];

export function scriptedLines(metadata: Record<string, unknown> | null | undefined, campaignScript?: string[] | null): readonly string[] {
  return ownScript(metadata) ?? campaignScript ?? DEFAULT_PERSONA;
}

/** The contact's own script (`metadata.simulate.say`), when it has one. */
export function ownScript(metadata: Record<string, unknown> | null | undefined): string[] | undefined {
  const simulate = metadata?.simulate;
  const say = simulate !== null && typeof simulate === 'object' ? (simulate as { say?: unknown }).say : undefined;
  if (!Array.isArray(say)) return undefined;
  return say.filter((line): line is string => typeof line === 'string' && line.trim() !== '');
}

const REACTION = /^(.+?)\s*=>\s*(.+)$/s;

/** One side of a simulated conversation: what the contact says next, after the agent said `agentSaid`. */
export interface ContactScript {
  next(agentSaid: string): string | undefined;
}

export function contactScript(lines: readonly string[]): ContactScript {
  const reactions = lines.flatMap((line) => {
    const parsed = REACTION.exec(line.trim());
    if (!parsed) return [];
    const cues = parsed[1]!
      .split('|')
      .map((cue) => cue.trim().toLowerCase())
      .filter(Boolean);
    return cues.length ? [{ cues, say: parsed[2]!.trim(), said: false }] : [];
  });
  const plain = lines.filter((line) => !REACTION.test(line.trim()));
  let nextPlain = 0;
  return {
    next(agentSaid) {
      const heard = ` ${agentSaid.toLowerCase().replace(/[^\p{L}\p{N}']+/gu, ' ')} `;
      const fitting = reactions.find(
        (reaction) => !reaction.said && reaction.cues.some((cue) => heard.includes(` ${cue.replace(/[^\p{L}\p{N}']+/gu, ' ').trim()} `)),
      );
      if (fitting) {
        fitting.said = true;
        return fitting.say;
      }
      return plain[nextPlain++];
    },
  };
}
