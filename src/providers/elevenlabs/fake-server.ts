// A local ElevenLabs API: `POST /v1/text-to-speech/{voice_id}/stream` streams audio bytes in
// several chunks, `GET /v2/voices` lists voices a page at a time, both in ElevenLabs' wire format,
// with its `xi-api-key` header checked and its error bodies (`{"detail": {"status", "message"}}`).
// Unless a test scripts the reply, the audio is silence in the asked format (never made to look
// like speech), about 60 ms per character of text.
import { createServer } from 'node:http';
import { listenOnLoopback, readBody, sendJson } from '../fake-server.ts';

export interface FakeVoice {
  voice_id: string;
  name: string;
  category?: string;
  labels?: Record<string, string>;
  verified_languages?: { language: string; model_id: string; accent?: string; locale?: string }[];
}

export type FakeSpeechReply =
  /** These chunks, one write each with a short gap, then the end; `holdAfter`: stop writing after that many and wait for the client to leave. */
  | { kind: 'audio'; chunks: Buffer[]; holdAfter?: number }
  /** An HTTP error in ElevenLabs' shape. */
  | { kind: 'error'; status: number; detail: { status: string; message: string } | { msg: string; loc: string[]; type: string }[] }
  /** These chunks, then the connection is destroyed mid-body. */
  | { kind: 'break'; chunks: Buffer[] };

export interface FakeSpeechRequest {
  voiceId: string;
  query: Record<string, string>;
  apiKey: string | undefined;
  body: { text?: string; model_id?: string; language_code?: string; [key: string]: unknown };
  /** How many audio chunks were written before the response ended or the client left. */
  chunksWritten: number;
  /** Whether every chunk of the reply was written. */
  completed: boolean;
  /** Resolves when the client's connection is gone. */
  closed: Promise<void>;
}

export const DEFAULT_FAKE_VOICES: FakeVoice[] = [
  {
    voice_id: '21m00Tcm4TlvDq8ikWAM',
    name: 'Rachel',
    category: 'premade',
    labels: { accent: 'american', age: 'young', gender: 'female', use_case: 'narration' },
    verified_languages: [{ language: 'en', model_id: 'eleven_flash_v2_5', accent: 'american', locale: 'en-US' }],
  },
  {
    voice_id: 'TxGEqnHWrfWFTfGW9XjX',
    name: 'Josh',
    category: 'premade',
    labels: { accent: 'american', age: 'young', gender: 'male', use_case: 'narration' },
    verified_languages: [
      { language: 'en', model_id: 'eleven_flash_v2_5', accent: 'american', locale: 'en-US' },
      { language: 'es', model_id: 'eleven_flash_v2_5' },
    ],
  },
];

export async function startFakeElevenLabs(options: { apiKey?: string; voices?: FakeVoice[]; pageSize?: number; gapMs?: number } = {}) {
  const apiKey = options.apiKey ?? 'el-test-key-0123456789';
  const voices = options.voices ?? DEFAULT_FAKE_VOICES;
  const gapMs = options.gapMs ?? 2;
  const replies: FakeSpeechReply[] = [];
  const speech: FakeSpeechRequest[] = [];
  const voiceListQueries: Record<string, string>[] = [];

  const server = createServer(async (req, res) => {
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    const url = new URL(req.url ?? '/', 'http://fake');
    const text = await readBody(req);
    const query = Object.fromEntries(url.searchParams);
    const key = req.headers['xi-api-key'];
    if (key !== apiKey) return sendJson(res, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });

    if (req.method === 'GET' && url.pathname === '/v2/voices') {
      voiceListQueries.push(query);
      const size = Math.min(Number(query.page_size ?? 10), options.pageSize ?? 100);
      const start = Number(query.next_page_token ?? 0);
      const page = voices.slice(start, start + size);
      const more = start + size < voices.length;
      return sendJson(res, 200, {
        voices: page.map((voice) => ({ samples: null, description: null, preview_url: null, available_for_tiers: [], ...voice })),
        has_more: more,
        total_count: voices.length,
        next_page_token: more ? String(start + size) : null,
      });
    }

    const match = /^\/v1\/text-to-speech\/([^/]+)\/stream$/.exec(url.pathname);
    if (req.method !== 'POST' || !match) return sendJson(res, 404, { detail: 'Not Found' });
    const voiceId = decodeURIComponent(match[1]!);
    const body = JSON.parse(text) as FakeSpeechRequest['body'];
    const received: FakeSpeechRequest = { voiceId, query, apiKey: key, body, chunksWritten: 0, completed: false, closed };
    speech.push(received);
    if (!voices.some((voice) => voice.voice_id === voiceId))
      return sendJson(res, 404, {
        detail: { status: 'voice_not_found', message: `A voice with the voice_id ${voiceId} was not found.` },
      });
    if (!body.text) return sendJson(res, 422, { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] });

    const reply = replies.shift() ?? { kind: 'audio', chunks: silence(query.output_format ?? 'mp3_44100_128', body.text) };
    if (reply.kind === 'error') return sendJson(res, reply.status, { detail: reply.detail });

    // ElevenLabs answers the stream with chunked transfer encoding; the client does not rely on its content type.
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' });
    let gone = false;
    void closed.then(() => (gone = true));
    const holdAfter = reply.kind === 'audio' ? (reply.holdAfter ?? Infinity) : Infinity;
    for (const chunk of reply.chunks) {
      if (gone) return;
      if (received.chunksWritten === holdAfter) return; // wait for the client to leave
      res.write(chunk);
      received.chunksWritten++;
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    if (reply.kind === 'break') return res.socket?.destroy();
    received.completed = true;
    res.end();
  });

  const listening = await listenOnLoopback(server);
  return {
    /** The API origin to configure (`ELEVENLABS_API_URL`). */
    url: listening.url,
    apiKey,
    voices,
    /** Every text-to-speech request, in order. */
    speech,
    /** The query of every voice list request, in order. */
    voiceListQueries,
    /** Queues the replies to the next text-to-speech requests, in order. */
    script(...next: FakeSpeechReply[]) {
      replies.push(...next);
    },
    close: listening.close,
  };
}

/** Silence in the asked format, in three chunks: 0xFF is μ-law's zero, raw PCM's is 0. */
function silence(outputFormat: string, text: string): Buffer[] {
  const [codec, rate] = outputFormat.split('_');
  const bytesPerSecond = Number(rate) * (codec === 'pcm' ? 2 : 1);
  const total = Math.max(3, Math.round((bytesPerSecond * text.length * 60) / 1000));
  const audio = Buffer.alloc(total - (total % 6), codec === 'ulaw' ? 0xff : 0);
  const third = audio.length / 3;
  return [audio.subarray(0, third), audio.subarray(third, 2 * third), audio.subarray(2 * third)];
}
