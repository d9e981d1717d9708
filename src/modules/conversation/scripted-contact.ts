/**
 * The contact of a simulated call: what they say, line by line, so a campaign can be rehearsed
 * offline with real agent replies. A contact's `metadata.simulate.say` (a list of lines) is their
 * script; else their campaign's `simulatorScript`; else they answer like someone picking up an
 * unexpected call.
 */
export const DEFAULT_PERSONA: readonly string[] = ['Hello?', 'Yes, speaking. What is this about?'];

export function scriptedLines(metadata: Record<string, unknown> | null | undefined, campaignScript?: string[] | null): readonly string[] {
  const simulate = metadata?.simulate;
  const say = simulate !== null && typeof simulate === 'object' ? (simulate as { say?: unknown }).say : undefined;
  if (!Array.isArray(say)) return campaignScript ?? DEFAULT_PERSONA;
  return say.filter((line): line is string => typeof line === 'string' && line.trim() !== '');
}
