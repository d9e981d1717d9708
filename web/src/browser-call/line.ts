/**
 * The browser's end of a call (the protocol of src/modules/media/schemas.ts): the microphone,
 * captured by an AudioWorklet at 16 kHz, goes up the socket as PCM16 frames; the agent's audio
 * comes down and is played in order; each mark is echoed once the audio before it has played (or
 * was dropped by a `clear`, as Twilio does), so the service knows what the caller heard.
 */
import type { BrowserAudio, BrowserCallCommand, BrowserCallEvent, BrowserCallProtocol } from '../../../src/api-types.ts';
import type { CaptureOptions } from './capture-worklet.ts';

const PROTOCOL: BrowserCallProtocol = 'callforge.browser-call.v1';
const AUDIO: BrowserAudio = { encoding: 'pcm16', sampleRate: 16_000 };
const FRAME_MS = 20;
/** Audio scheduled this far ahead of the clock, so the first chunk never starts in the past. */
const PLAYBACK_LEAD_S = 0.05;

/** What the page shows of the line itself: frames both ways and marks echoed. */
export interface LineCounts {
  framesSent: number;
  agentFrames: number;
  agentSeconds: number;
  marksPlayed: number;
}

export interface BrowserLine {
  hangUp(): void;
  /** Releases the microphone and the audio context (after the call, or to abandon it). */
  close(): void;
}

export interface LineListener {
  onEvent(event: BrowserCallEvent): void;
  onCounts(counts: LineCounts): void;
  /** The socket closed: `reason` is the close's reason (an error code for a refusal). */
  onClosed(code: number, reason: string): void;
}

/** The microphone, or a sentence saying why not (the browser refused, or there is none). */
export async function openMicrophone(): Promise<MediaStream> {
  if (!navigator.mediaDevices?.getUserMedia)
    throw new Error('This browser cannot use a microphone here; open the dashboard over HTTPS (or on localhost).');
  try {
    return await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (caught) {
    const name = (caught as DOMException).name;
    if (name === 'NotAllowedError')
      throw new Error('The browser was not allowed to use the microphone; allow it for this page and call again.');
    if (name === 'NotFoundError') throw new Error('No microphone was found; connect one and call again.');
    throw caught;
  }
}

/**
 * Starts a call with `agentId` on `microphone`. The WebSocket is signed in by the dashboard's session
 * cookie, which a same-origin upgrade carries (the service checks the upgrade's Origin).
 */
export async function startBrowserLine(
  agentId: string,
  microphone: MediaStream,
  contact: Record<string, string>,
  listener: LineListener,
): Promise<BrowserLine> {
  // Echo cancellation keeps the agent's voice, played through the speakers, out of the microphone:
  // it would otherwise be heard as the caller speaking over the agent.
  const context = new AudioContext();
  try {
    await context.audioWorklet.addModule('/assets/capture-worklet.js');
  } catch (caught) {
    microphone.getTracks().forEach((track) => track.stop());
    void context.close();
    throw caught;
  }
  const options: CaptureOptions = { targetRate: AUDIO.sampleRate, frameSamples: (AUDIO.sampleRate * FRAME_MS) / 1000 };
  // The name capture-worklet.ts registers its processor under.
  const capture = new AudioWorkletNode(context, 'callforge-capture', { processorOptions: options });
  // A worklet is only run while it reaches the destination; muted, it adds nothing to what is heard.
  const mute = new GainNode(context, { gain: 0 });
  context.createMediaStreamSource(microphone).connect(capture).connect(mute).connect(context.destination);

  const counts: LineCounts = { framesSent: 0, agentFrames: 0, agentSeconds: 0, marksPlayed: 0 };
  const query = new URLSearchParams({ agentId, ...contact });
  const protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(`${protocol}//${location.host}/api/v1/test-chats/voice?${query}`, [PROTOCOL]);
  socket.binaryType = 'arraybuffer';
  const send = (command: BrowserCallCommand) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(command));

  capture.port.onmessage = (message: MessageEvent<ArrayBuffer>) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    socket.send(message.data);
    counts.framesSent++;
  };

  // Playback: chunks scheduled back to back on the context's clock; a mark rides on the last chunk before it.
  let playhead = 0;
  let queued = new Set<AudioBufferSourceNode>();
  let last: AudioBufferSourceNode | undefined;
  const report = () => listener.onCounts({ ...counts });
  const echo = (name: string) => {
    send({ type: 'mark', name });
    counts.marksPlayed++;
    report();
  };

  function play(bytes: ArrayBuffer): void {
    const pcm = new Int16Array(bytes, 0, Math.floor(bytes.byteLength / 2));
    if (!pcm.length) return;
    const buffer = context.createBuffer(1, pcm.length, AUDIO.sampleRate);
    const samples = buffer.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) samples[i] = pcm[i]! / 32768;
    const source = new AudioBufferSourceNode(context, { buffer });
    source.connect(context.destination);
    playhead = Math.max(playhead, context.currentTime + PLAYBACK_LEAD_S);
    source.start(playhead);
    playhead += buffer.duration;
    queued.add(source);
    last = source;
    source.onended = () => {
      queued.delete(source);
      if (last === source) last = undefined;
    };
    counts.agentFrames++;
    counts.agentSeconds += buffer.duration;
    report();
  }

  function mark(name: string): void {
    if (!last) return echo(name);
    last.addEventListener('ended', () => echo(name));
  }

  /** Drops what is queued: each source ends now, which echoes the marks riding on them. */
  function clear(): void {
    const dropped = queued;
    queued = new Set();
    last = undefined;
    playhead = 0;
    for (const source of dropped) source.stop();
  }

  socket.onmessage = (message: MessageEvent<ArrayBuffer | string>) => {
    if (typeof message.data !== 'string') return play(message.data);
    const event = JSON.parse(message.data) as BrowserCallEvent;
    if (event.type === 'mark') mark(event.name);
    else if (event.type === 'clear') clear();
    listener.onEvent(event);
  };

  function close(): void {
    clear();
    microphone.getTracks().forEach((track) => track.stop());
    void context.close();
  }
  socket.onclose = (event) => {
    close();
    listener.onClosed(event.code, event.reason);
  };

  return {
    hangUp: () => (socket.readyState === WebSocket.OPEN ? send({ type: 'hangup' }) : socket.close()),
    close: () => {
      socket.close();
      close();
    },
  };
}
