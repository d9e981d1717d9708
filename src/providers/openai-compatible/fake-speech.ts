// A local OpenAI-compatible speech server: `POST /v1/audio/transcriptions` (multipart/form-data with
// the audio file, the model and the language; answers `{ "text": … }`) and `POST /v1/audio/speech`
// (a JSON body; answers raw audio bytes, here pcm streamed in several chunks as OpenAI streams them).
// It records what it received; the WAV header is read here by hand, apart from the code that writes it.
import { createServer, type IncomingMessage } from 'node:http';
import { listenOnLoopback, sendJson } from '../fake-server.ts';

export interface ReceivedTranscription {
  authorization: string | undefined;
  contentType: string | undefined;
  fields: Record<string, string>;
  file: { name: string; type: string; bytes: Buffer };
  /** Read from the file's RIFF header. */
  wav: { format: number; channels: number; sampleRate: number; bitsPerSample: number; samples: Buffer } | null;
}

export interface ReceivedSpeech {
  authorization: string | undefined;
  body: { model?: string; voice?: string; input?: string; response_format?: string };
}

export type FakeSpeechReply =
  | { kind: 'text'; text: string }
  /** `between` (when given) is awaited before each chunk after the first, so a test can read one before the next is sent. */
  | { kind: 'audio'; chunks: Buffer[]; between?: () => Promise<void> }
  | { kind: 'error'; status: number; message: string }
  /** Sends these chunks, then stays silent until the client leaves. */
  | { kind: 'stall'; chunks: Buffer[] };

/**
 * `transcribe`: answers every transcription by what it was sent, instead of the script (a bench's
 * callers say known phrases: the fake finds them in the audio), as a real recogniser hears it.
 */
export async function startFakeSpeech(options: { transcribe?: (received: ReceivedTranscription) => string } = {}) {
  const replies: FakeSpeechReply[] = [];
  const transcriptions: ReceivedTranscription[] = [];
  const speeches: ReceivedSpeech[] = [];
  const server = createServer(async (req, res) => {
    const body = await rawBody(req);
    if (req.method === 'POST' && req.url === '/v1/audio/transcriptions') {
      const received = await readTranscription(req, body);
      transcriptions.push(received);
      if (options.transcribe) return sendJson(res, 200, { text: options.transcribe(received) });
    } else if (req.method === 'POST' && req.url === '/v1/audio/speech')
      speeches.push({ authorization: req.headers.authorization, body: JSON.parse(body.toString('utf8')) as ReceivedSpeech['body'] });
    else return sendJson(res, 404, { error: { message: 'Unknown path' } });
    const reply = replies.shift();
    if (!reply) return sendJson(res, 500, { error: { message: 'The fake has no reply scripted.', type: 'server_error', code: null } });
    if (reply.kind === 'error')
      return sendJson(res, reply.status, { error: { message: reply.message, type: 'invalid_request_error', param: null, code: null } });
    if (reply.kind === 'text') return sendJson(res, 200, { text: reply.text });
    res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
    for (const [index, chunk] of reply.chunks.entries()) {
      if (index > 0 && reply.kind === 'audio') await reply.between?.();
      await new Promise((resolve) => res.write(chunk, resolve));
    }
    if (reply.kind === 'audio') res.end();
  });
  const listening = await listenOnLoopback(server);
  return {
    ...listening,
    transcriptions,
    speeches,
    /** Queues the replies to the next requests, in order. */
    script(...next: FakeSpeechReply[]) {
      replies.push(...next);
    },
    /** Drops the replies no request took (a test that ended early leaves none for the next), and returns them. */
    forget(): FakeSpeechReply[] {
      return replies.splice(0);
    },
  };
}

async function rawBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The multipart form, parsed by the platform's own Request (the same parser a web server would use). */
async function readTranscription(req: IncomingMessage, body: Buffer): Promise<ReceivedTranscription> {
  const form = await new Request('http://fake/', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type']! },
    body,
  }).formData();
  const fields: Record<string, string> = {};
  let file: ReceivedTranscription['file'] | undefined;
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') fields[name] = value;
    else file = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  if (!file) throw new Error('the form holds no file');
  return { authorization: req.headers.authorization, contentType: req.headers['content-type'], fields, file, wav: riff(file.bytes) };
}

function riff(bytes: Buffer): ReceivedTranscription['wav'] {
  if (bytes.length < 44 || bytes.toString('ascii', 0, 4) !== 'RIFF' || bytes.toString('ascii', 8, 16) !== 'WAVEfmt ') return null;
  if (bytes.toString('ascii', 36, 40) !== 'data') return null;
  const dataSize = bytes.readUInt32LE(40);
  return {
    format: bytes.readUInt16LE(20),
    channels: bytes.readUInt16LE(22),
    sampleRate: bytes.readUInt32LE(24),
    bitsPerSample: bytes.readUInt16LE(34),
    samples: bytes.subarray(44, 44 + dataSize),
  };
}
