import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PURGE_RECORDINGS, purgeRecordingsJob } from '../src/modules/calls/recordings.ts';
import { mulawToPcm16, pcm16Samples, pcm16ToMulaw } from '../src/platform/audio.ts';
import { utterance } from '../src/providers/deepgram/fake-server.ts';
import type { FakeMediaStream } from '../src/providers/twilio/fake-media-stream.ts';
import { bearer, until } from './harness.ts';
import { marksOf, speech, startTwilioVoice, type PlacedCall, type TwilioVoice } from './twilio-voice.ts';
import { newTenant } from './voice-fixtures.ts';

// Issue 17, recording: a Twilio call through the real voice pipeline (Twilio's side of the stream,
// Deepgram, ElevenLabs and the model as local fakes), recorded as the line carried it. Audio is
// counted in samples of 8 kHz μ-law: one byte each on the line, one frame of two samples in the WAV.
let voice: TwilioVoice;

beforeAll(async () => {
  voice = await startTwilioVoice();
  await voice.t.runtime.jobs.work([purgeRecordingsJob(voice.t.runtime)]);
});
afterAll(() => voice.close());

const RECORDED = { recording: { enabled: true, retentionDays: 7 } };

/** `samples` of a sine at `hz`, as μ-law: speech enough for an energy meter, and exact to compare. */
function tone(samples: number, hz: number): Buffer {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000));
  return pcm16ToMulaw(Buffer.from(pcm.buffer));
}
/** `samples` of a sound whose pitch glides from 300 to 3,000 Hz and back: loud like speech, never the steady tone of a voicemail's beep. */
function glide(samples: number): Buffer {
  const pcm = new Int16Array(samples);
  let phase = 0;
  for (let i = 0; i < samples; i++) {
    phase += (2 * Math.PI * (300 + 2700 * Math.abs(Math.sin((Math.PI * i) / 2000)))) / 8000;
    pcm[i] = Math.round(8000 * Math.sin(phase));
  }
  return pcm16ToMulaw(Buffer.from(pcm.buffer));
}
const decoded = (mulaw: Buffer) => Array.from(pcm16Samples(mulawToPcm16(mulaw)));

/** The WAV's format and each channel's samples. */
function readWav(wav: Buffer) {
  expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
  expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
  const format = {
    pcm: wav.readUInt16LE(20),
    channels: wav.readUInt16LE(22),
    sampleRate: wav.readUInt32LE(24),
    bits: wav.readUInt16LE(34),
  };
  expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
  const frames = pcm16Samples(wav.subarray(44));
  const left: number[] = [];
  const right: number[] = [];
  for (let i = 0; i < frames.length; i += 2) {
    left.push(frames[i]!);
    right.push(frames[i + 1]!);
  }
  return { format, left, right };
}

const rms = (samples: number[]) => Math.sqrt(samples.reduce((sum, sample) => sum + sample * sample, 0) / Math.max(1, samples.length));

const getRecording = (placed: PlacedCall) => placed.api('GET', `/call-logs/${placed.callId}/recording`);

/** The recording once it holds `frames` frames (it is written as the call ends). */
const recordingOf = (placed: PlacedCall, frames: number) =>
  until('the whole recording', async () => {
    const response = await getRecording(placed);
    return response.statusCode === 200 && response.rawPayload.length === 44 + frames * 4 ? response : undefined;
  });

/** What Twilio was sent of the agent's audio, in bytes. */
const agentBytesSent = (stream: FakeMediaStream) =>
  stream.received.filter((m) => m.event === 'media').reduce((sum, m) => sum + Buffer.from(m.media!.payload, 'base64').length, 0);

describe('a recorded call', () => {
  it("is a two-channel WAV: the caller's audio on the left, the agent's on the right, on the line's time", async () => {
    const placed = await voice.placedCall(RECORDED);
    const opening = tone(4000, 440);
    const answer = tone(4000, 660);
    const callerWords = tone(8000, 1000);
    voice.elevenlabs.script(
      { kind: 'audio', chunks: [opening.subarray(0, 2000), opening.subarray(2000)] },
      { kind: 'audio', chunks: [answer] },
    );
    voice.deepgram.script(...utterance('When do you open?', { startsAfterBytes: 4800, endsAfterBytes: 12_000 }));
    voice.chat.script({ kind: 'stream', text: ['At eight.'] });
    expect((await voice.getCall(placed)).recordingUrl).toBeNull();

    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    // Twilio sends the caller's line all the time: silence while the agent speaks, then their words.
    await stream.sendAudio(speech(4000));
    await stream.sendAudio(callerWords);
    await until('the answer played', () => marksOf(stream).length >= 2);
    // The caller listens to the answer, then stays on the line 20 s more: the recording spans two stored chunks.
    await stream.sendAudio(speech(4000 + 160_000));
    stream.stop();

    const frames = 4000 + 8000 + 4000 + 160_000;
    const response = await recordingOf(placed, frames);
    expect(response.headers['content-type']).toBe('audio/wav');
    expect(Number(response.headers['content-length'])).toBe(44 + frames * 4);
    const { format, left, right } = readWav(response.rawPayload);
    expect(format).toEqual({ pcm: 1, channels: 2, sampleRate: 8000, bits: 16 });

    // The opening (0 to 0.5 s): the agent's audio as synthesised, the caller silent.
    expect(right.slice(0, 4000)).toEqual(decoded(opening));
    expect(rms(left.slice(0, 4000))).toBe(0);
    // The caller's words (0.5 to 1.5 s): their audio as sent, the agent silent.
    expect(left.slice(4000, 12_000)).toEqual(decoded(callerWords));
    expect(rms(left.slice(4000, 12_000))).toBeGreaterThan(4000);
    expect(rms(right.slice(4000, 12_000))).toBe(0);
    // The answer plays from where the line was when it was sent (1.5 to 2 s), the caller silent.
    expect(right.slice(12_000, 16_000)).toEqual(decoded(answer));
    expect(rms(left.slice(12_000, 16_000))).toBe(0);
    expect(rms(right.slice(16_000))).toBe(0);

    const call = await voice.getCall(placed);
    expect(call.recordingUrl).toBe(`/api/v1/call-logs/${placed.callId}/recording`);
    // The recording is the tenant's: the dashboard's session reads it too.
    const bySession = await voice.t.app.inject({ method: 'GET', url: call.recordingUrl, headers: bearer(placed.owner.token) });
    expect(bySession.statusCode).toBe(200);
    expect(bySession.rawPayload.equals(response.rawPayload)).toBe(true);
  });

  it("times the answer at the caller's ear as the recording hears it, and analytics give its p50/p95 per agent and campaign", async () => {
    const placed = await voice.placedCall(RECORDED);
    const opening = tone(2000, 440);
    voice.elevenlabs.script(
      { kind: 'audio', chunks: [opening] },
      { kind: 'audio', chunks: [tone(4000, 660)] },
      { kind: 'audio', chunks: [tone(800, 550)] },
    );
    // The recogniser ends the first turn once it has 300 ms (2,400 bytes) of the silence after the caller's
    // words, the second after 500 ms (4,000 bytes).
    voice.deepgram.script(
      ...utterance('When do you open?', { startsAfterBytes: 800, endsAfterBytes: 4800 + 2400 }),
      ...utterance('And on Saturday?', { startsAfterBytes: 20_000, endsAfterBytes: 22_400 + 4000 }),
    );
    voice.chat.script({ kind: 'stream', text: ['At eight.'] }, { kind: 'stream', text: ['Bye.'] });

    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    let line = 0;
    const send = async (audio: Buffer, realPace = false) => {
      await stream.sendAudio(audio, { realPace });
      line += audio.length;
    };
    /** The line's silence at its real pace, 20 ms a frame, as Twilio sends it, until `marks` marks came back. */
    const silenceUntil = async (marks: number) => {
      while (marksOf(stream).length < marks) await send(speech(160), true);
    };
    await send(speech(800));
    await send(glide(4000)); // 0.1 to 0.6 s: the question
    await silenceUntil(2);
    const answered = line;
    // The caller hears the answer out (0.5 s), then speaks again at 2.5 s of the line.
    await send(speech(20_000 - line));
    await send(glide(2400));
    await silenceUntil(3);
    await send(speech(4800));
    stream.stop();

    const { right } = readWav((await recordingOf(placed, line)).rawPayload);
    // A tone's first sample is zero: the answer starts one sample before the first sound of it.
    const answerStarts = right.findIndex((sample, index) => index >= 2000 && sample !== 0) - 1;
    expect(answerStarts).toBeLessThanOrEqual(answered);
    const recordedGapMs = (answerStarts - 4800) / 8;
    const transcript = (await voice.getCall(placed)).transcript;
    const [first, second] = ['At eight.', 'Bye.'].map((text) => transcript.find((t: { text: string }) => t.text === text).latency.voice);
    expect(first.callerStoppedMs).toBe(600);
    expect(second.callerStoppedMs).toBe(2800);
    // Nothing can come before the recogniser heard the silence that ends the turn, and each step follows the one before.
    for (const [timed, wait] of [
      [first, 300],
      [second, 500],
    ] as const) {
      expect(timed.endOfTurnMs).toBeGreaterThanOrEqual(wait);
      expect(timed.sttFinalMs).toBeGreaterThanOrEqual(wait);
      expect(timed.firstTokenMs).toBeGreaterThanOrEqual(timed.endOfTurnMs);
      expect(timed.heardMs).toBeGreaterThanOrEqual(timed.firstTokenMs);
    }
    // The recording places the answer at the line's time its first audio went out; the meter adds the
    // time since the caller's last frame arrived, less than a frame on a line at its pace (with slack for a busy machine).
    expect(first.heardMs).toBeGreaterThanOrEqual(recordedGapMs);
    expect(first.heardMs - recordedGapMs).toBeLessThan(100);
    // The opening answered no sound of the caller's: it is not timed.
    expect(transcript[0].latency?.voice).toBeUndefined();

    // Once the call ended, analytics read both answers: p50 and p95 between them, interpolated (PostgreSQL's percentile_cont), to the nearest ms.
    expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '4' })).toBe(204);
    await until('the call over', async () => ((await voice.getCall(placed)).status === 'ENDED' ? true : undefined));
    const [low, high] = [first.heardMs, second.heardMs].sort((a, b) => a - b);
    const figures = { answers: 2, p50Ms: Math.round((low + high) / 2), p95Ms: Math.round(low + 0.95 * (high - low)) };
    const call = await voice.getCall(placed);
    const range = 'from=2020-01-01&to=2099-12-31';
    const latency = (await placed.api('GET', `/analytics/latency?${range}`)).json();
    expect(latency).toMatchObject({ ...figures, byAgent: [{ agentId: call.agentId, ...figures }] });
    expect(latency.byCampaign).toEqual([
      {
        campaignId: call.campaignId,
        campaignName: expect.stringMatching(/^Voice /),
        agentId: call.agentId,
        agentName: expect.any(String),
        ...figures,
      },
    ]);
    const stranger = await newTenant(voice.t.app);
    const none = { answers: 0, p50Ms: null, p95Ms: null, byAgent: [], byCampaign: [] };
    expect((await stranger.api('GET', `/analytics/latency?${range}`)).json()).toMatchObject(none);
    expect((await placed.api('GET', `/analytics/latency?${range}&campaignId=${crypto.randomUUID()}`)).json()).toMatchObject(none);
    expect((await placed.api('GET', `/analytics/latency?${range}&agentId=${crypto.randomUUID()}`)).json()).toMatchObject(none);
  });

  it('keeps only what the caller heard when they speak over the agent', async () => {
    const placed = await voice.placedCall(RECORDED);
    const opening = tone(2000, 440);
    const longAnswer = tone(16_000, 660); // two seconds, all sent to Twilio at once
    const shortAnswer = tone(2000, 550);
    voice.elevenlabs.script(
      { kind: 'audio', chunks: [opening] },
      { kind: 'audio', chunks: [longAnswer.subarray(0, 8000), longAnswer.subarray(8000)] },
      { kind: 'audio', chunks: [shortAnswer] },
    );
    // The second utterance's first words come at 15,600 bytes: the caller cuts in 0.7 s into the answer.
    voice.deepgram.script(
      ...utterance('Where do I park?', { startsAfterBytes: 2800, endsAfterBytes: 10_000 }),
      ...utterance('Stop please now', { startsAfterBytes: 14_800, endsAfterBytes: 17_200 }),
    );
    voice.chat.script({ kind: 'stream', text: ['Parking is behind the building.'] }, { kind: 'stream', text: ['Sure.'] });

    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    stream.holdMarks(true); // the answer stays queued at Twilio, not yet played
    await stream.sendAudio(speech(2000));
    await stream.sendAudio(tone(8000, 1000)); // 0.25 to 1.25 s: the question
    await until('the long answer sent', () => agentBytesSent(stream) >= 2000 + 16_000);
    await stream.sendAudio(speech(4000)); // 1.25 to 1.75 s: listening
    const interruption = tone(3200, 1000);
    await stream.sendAudio(interruption.subarray(0, 1600)); // to 1.95 s, when Deepgram hears the first word
    await until('the clear', () => stream.received.some((m) => m.event === 'clear'));
    stream.holdMarks(false);
    stream.releaseMarks();
    await stream.sendAudio(interruption.subarray(1600)); // to 2.15 s
    await until('the short answer played', () =>
      voice.elevenlabs.speech.some((s) => s.body.text === 'Sure.') && stream.received.at(-1)?.event === 'mark' ? true : undefined,
    );
    await stream.sendAudio(speech(2000)); // to 2.4 s
    stream.stop();

    const { left, right } = readWav((await recordingOf(placed, 19_200)).rawPayload);
    // The answer began at 1.25 s; the caller heard it until the clear at 1.95 s, and nothing after.
    expect(right.slice(10_000, 15_600)).toEqual(decoded(longAnswer.subarray(0, 5600)));
    expect(rms(right.slice(15_600, 17_200))).toBe(0);
    expect(left.slice(14_000, 17_200)).toEqual(decoded(interruption));
    // The short answer plays where the line was when it was sent.
    expect(right.slice(17_200, 19_200)).toEqual(decoded(shortAnswer));
    // The transcript keeps the sentences whose mark came back: none of this one, so no turn of it; the recording keeps the audio up to the clear.
    const call = await voice.getCall(placed);
    expect(call.transcript.slice(1).map((turn: { role: string; text: string }) => [turn.role, turn.text])).toEqual([
      ['contact', 'Where do I park?'],
      ['contact', 'Stop please now'],
      ['agent', 'Sure.'],
    ]);
  });

  it('is not made when the agent does not record, which is the default', async () => {
    const placed = await voice.placedCall();
    const agent = (await placed.api('GET', '/agents?limit=1')).json().data[0];
    expect(agent.recording).toEqual({ enabled: false, retentionDays: 30 });
    voice.deepgram.script();
    const stream = await voice.connect(placed);
    await until('the opening played', () => marksOf(stream).length >= 1);
    // Longer than a stored chunk: a recording would have written its first one while the call went on.
    await stream.sendAudio(speech(170_000));
    const listened = voice.deepgram.sessions.at(-1)!;
    await until('the caller heard out', () => voice.deepgram.audioOf(listened).length === 170_000);
    stream.stop();
    await stream.closed;
    expect(await voice.twilio.sendStatus(placed.sid, 'completed', { CallDuration: '22' })).toBe(204);
    await until('the call over', async () => ((await voice.getCall(placed)).status === 'ENDED' ? true : undefined));
    expect((await voice.getCall(placed)).recordingUrl).toBeNull();
    const response = await getRecording(placed);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({
      code: 'NOT_FOUND',
      message: `Call ${placed.callId} has no recording: its agent did not record it, or the recording was deleted after its retention; turn on the agent's recording to record its next calls.`,
    });
  });
});

/** A recorded call of one second of line time, ended by the caller. */
async function recordedCall(recording: { enabled: true; retentionDays: number }) {
  const placed = await voice.placedCall({ recording });
  voice.deepgram.script();
  const stream = await voice.connect(placed);
  await until('the opening played', () => marksOf(stream).length >= 1);
  await stream.sendAudio(speech(8000));
  stream.stop();
  await recordingOf(placed, 8000);
  return placed;
}

describe('a recording is kept from others and for its retention only', () => {
  it("answers 404 for another tenant's call, as for a call that does not exist", async () => {
    const placed = await recordedCall({ enabled: true, retentionDays: 7 });
    const stranger = await newTenant(voice.t.app);
    for (const response of [
      await stranger.api('GET', `/call-logs/${placed.callId}/recording`),
      await placed.api('GET', '/call-logs/00000000-0000-4000-8000-000000000000/recording'),
    ]) {
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: 'Call not found.' });
    }
    expect((await placed.api('GET', `/call-logs/${placed.callId}/recording`)).statusCode).toBe(200);
  });

  it('refuses a retention outside 1 to 3650 days, and an unknown recording field', async () => {
    const { api } = await newTenant(voice.t.app);
    for (const [recording, path] of [
      [{ enabled: true, retentionDays: 0 }, '/recording/retentionDays'],
      [{ enabled: true, retentionDays: 3651 }, '/recording/retentionDays'],
      [{ enabled: true, retentionDays: 1.5 }, '/recording/retentionDays'],
      [{ enabled: 'yes' }, '/recording/enabled'],
      [{ enabled: true, keepForever: true }, '/recording/keepForever'],
    ] as const) {
      const response = await api('POST', '/agents', { name: `Recorder ${path} ${JSON.stringify(recording)}`, recording });
      expect(response.statusCode, JSON.stringify(recording)).toBe(400);
      expect(response.json().details[0].path).toBe(path);
    }
    const created = await api('POST', '/agents', { name: 'Recorder', recording: { enabled: true } });
    expect(created.json().recording).toEqual({ enabled: true, retentionDays: 30 });
    const updated = await api('PATCH', `/agents/${created.json().id}`, { recording: { enabled: true, retentionDays: 90 } });
    expect(updated.json().recording).toEqual({ enabled: true, retentionDays: 90 });
  });

  it('is deleted by the hourly job once its retention is over, and the call loses its recordingUrl', async () => {
    const started = voice.clock.now();
    try {
      const placed = await recordedCall({ enabled: true, retentionDays: 1 });
      const kept = await recordedCall({ enabled: true, retentionDays: 2 });
      const schedules = await voice.t.runtime.db.query<{ name: string; cron: string }>('SELECT name, cron FROM pgboss.schedule');
      expect(schedules.rows).toContainEqual({ name: PURGE_RECORDINGS, cron: '0 * * * *' });

      const purge = async () => {
        const before = (
          await voice.t.runtime.db.query('SELECT 1 FROM pgboss.job WHERE name = $1 AND state = $2', [PURGE_RECORDINGS, 'completed'])
        ).rowCount;
        await voice.t.runtime.jobs.send(PURGE_RECORDINGS, {});
        await until('the purge job done', async () => {
          const { rowCount } = await voice.t.runtime.db.query('SELECT 1 FROM pgboss.job WHERE name = $1 AND state = $2', [
            PURGE_RECORDINGS,
            'completed',
          ]);
          return rowCount > before;
        });
      };
      voice.clock.advance(23 * 3600_000); // a day less an hour: kept
      await purge();
      expect((await getRecording(placed)).statusCode).toBe(200);

      voice.clock.advance(3600_000); // a day after it was recorded: deleted
      await purge();
      const gone = await getRecording(placed);
      expect(gone.statusCode).toBe(404);
      expect(gone.json().message).toMatch(/^Call .* has no recording/);
      expect((await voice.getCall(placed)).recordingUrl).toBeNull();
      const chunks = await voice.t.runtime.db.query('SELECT 1 FROM call_recording_chunks WHERE call_id = $1', [placed.callId]);
      expect(chunks.rowCount).toBe(0);
      // A longer retention is not over yet.
      expect((await getRecording(kept)).statusCode).toBe(200);
      expect((await voice.getCall(kept)).recordingUrl).not.toBeNull();
    } finally {
      voice.clock.set(started);
    }
  });
});
