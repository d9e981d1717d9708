/**
 * Replies that mean "stop contacting me": the opt-out keywords of US carriers and the CTIA's
 * messaging principles (STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT), REVOKE and OPT OUT (which
 * the FCC's 2025 consent-revocation rule adds), Meta's "Stop promotions" button, and their common
 * equivalents in Spanish, Portuguese, French, German and Italian. Every language is honoured for
 * every contact: a person may answer in any of them, and a missed opt-out costs more than a
 * misread one.
 */
const OPT_OUT_REPLIES = new Set([
  'stop',
  'stopall',
  'stop all',
  'unsubscribe',
  'cancel',
  'end',
  'quit',
  'revoke',
  'opt out',
  'optout',
  'opt-out',
  'stop promotions',
  // Spanish and Portuguese
  'alto',
  'para',
  'parar',
  'baja',
  'darme de baja',
  'cancelar',
  'detener',
  'sair',
  // French
  'arret',
  'arrêt',
  'arreter',
  'arrêter',
  'desabonner',
  'désabonner',
  'desinscrire',
  'désinscrire',
  // German
  'stopp',
  'abmelden',
  'abbestellen',
  // Italian
  'basta',
  'annulla',
  'disiscrivi',
]);

/** Whether a reply is an opt-out: one of the words alone, in any case, with punctuation or spaces around it (as carriers match). */
export function isOptOutReply(text: string): boolean {
  const words = text
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return OPT_OUT_REPLIES.has(words);
}
