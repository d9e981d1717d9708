import { describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import { telnyxMediaStream as wire } from './media-stream.ts';

// Frames as Telnyx's AsyncAPI description of Media Streaming shows them (the error frame's payload
// with the fields it names: code, title, detail).
const CALL_ID = '0195f3c2-7a10-7000-8000-000000000001';
const START = {
  event: 'start',
  sequence_number: '1',
  stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
  start: {
    user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
    call_control_id: 'v3:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ',
    call_session_id: 'ff55a038-6f5d-11ef-9692-02420aeffb1f',
    from: '+13122010094',
    to: '+13122123456',
    tags: ['TAG1'],
    client_state: Buffer.from(CALL_ID).toString('base64'),
    custom_parameters: { customer_id: 'customer_123' },
    media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
  },
};
const startWith = (fields: Record<string, unknown>) => JSON.stringify({ ...START, start: { ...START.start, ...fields } });

describe('Telnyx media stream frames', () => {
  it('reads start with its call, stream and our call id from the client state', () => {
    expect(wire.read(JSON.stringify(START))).toEqual({
      type: 'start',
      streamId: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
      providerCallId: 'v3:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ',
      parameters: { callId: CALL_ID },
      format: { encoding: 'mulaw', sampleRate: 8000 },
    });
  });

  it('takes no call id from a missing or non-canonical client state (the stream is then refused)', () => {
    expect(wire.read(startWith({ client_state: null }))).toMatchObject({ parameters: {} });
    expect(wire.read(startWith({ client_state: 'not base64!' }))).toMatchObject({ parameters: {} });
  });

  it('decodes inbound audio and ignores the outbound track', () => {
    const payload = Buffer.from([0xff, 0x7f, 0x00]).toString('base64');
    const media = (track: string) =>
      JSON.stringify({ event: 'media', sequence_number: '4', media: { track, chunk: '2', timestamp: '40', payload }, stream_id: 'S1' });
    expect(wire.read(media('inbound'))).toEqual({ type: 'audio', audio: Buffer.from([0xff, 0x7f, 0x00]) });
    expect(wire.read(media('outbound'))).toEqual({ type: 'other' });
  });

  it('reads marks, keys, errors, stop and connected', () => {
    expect(wire.read('{"event":"mark","sequence_number":"9","stream_id":"S1","mark":{"name":"m3"}}')).toEqual({ type: 'mark', name: 'm3' });
    expect(
      wire.read('{"event":"dtmf","stream_id":"S1","occurred_at":"2026-11-23T10:00:00Z","sequence_number":"5","dtmf":{"digit":"#"}}'),
    ).toEqual({
      type: 'dtmf',
      digit: '#',
    });
    expect(
      wire.read(
        '{"event":"error","sequence_number":"6","stream_id":"S1","payload":{"code":100003,"title":"malformed_frame","detail":"Bad payload"}}',
      ),
    ).toEqual({ type: 'error', message: 'Telnyx media stream error 100003: malformed_frame: Bad payload' });
    expect(wire.read('{"event":"stop","sequence_number":"7","stop":{"user_id":"u","call_control_id":"v3:x"},"stream_id":"S1"}')).toEqual({
      type: 'stop',
    });
    expect(wire.read('{"event":"connected","version":"1.0.0"}')).toEqual({ type: 'other' });
  });

  it.each([
    ['not JSON', 'media payload'],
    ['an array', '[1,2]'],
    ['media without payload', '{"event":"media","media":{}}'],
    ['start without call_control_id', '{"event":"start","stream_id":"S1","start":{}}'],
    ['start without stream_id', JSON.stringify({ ...START, stream_id: undefined })],
    ['audio not PCMU', startWith({ media_format: { encoding: 'L16', sample_rate: 16000, channels: 1 } })],
    ['PCMU at 16 kHz', startWith({ media_format: { encoding: 'PCMU', sample_rate: 16000, channels: 1 } })],
    ['a key that is no key', '{"event":"dtmf","dtmf":{"digit":"12"}}'],
    ['a mark without its name', '{"event":"mark","mark":{}}'],
    ['an unknown event', '{"event":"surprise"}'],
  ])('refuses %s', (_, message) => {
    expect(() => wire.read(message)).toThrow(ProviderError);
  });

  it('writes media, mark and clear as Telnyx reads them, with the stream id', () => {
    expect(JSON.parse(wire.audio('S1', Buffer.from([1, 2, 3])))).toEqual({ event: 'media', stream_id: 'S1', media: { payload: 'AQID' } });
    expect(JSON.parse(wire.mark('S1', 'm1'))).toEqual({ event: 'mark', stream_id: 'S1', mark: { name: 'm1' } });
    expect(JSON.parse(wire.clear('S1'))).toEqual({ event: 'clear', stream_id: 'S1' });
  });

  it('plays frames of 20 ms to 30 s of PCMU', () => {
    expect(wire.frameBytes).toEqual({ min: 160, max: 240_000 });
  });

  it('takes our token from the upgrade header; the upgrade itself carries no signature to check', () => {
    expect(wire.signatureHeader).toBe('x-telnyx-streaming-auth-token');
    expect(wire.upgradeParameters!({ 'x-telnyx-streaming-auth-token': 'tok_1' })).toEqual({ token: 'tok_1' });
    expect(wire.upgradeParameters!({})).toEqual({});
    expect(wire.upgradeParameters!({ 'x-telnyx-streaming-auth-token': ['a', 'b'] })).toEqual({});
    expect(wire.verifyUpgrade('wss://voice.example.com/api/v1/telephony/telnyx/media', {}, {})).toBe(true);
  });
});
