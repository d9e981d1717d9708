import type { Provider } from '../types.ts';
import { espeakSpeech } from './speech.ts';

/** eSpeak NG: offline text-to-speech in about a hundred languages, robotic but always there. */
export const espeak: Provider = {
  name: 'ESPEAK',
  title: 'eSpeak NG',
  tts: { connect: () => espeakSpeech },
};
