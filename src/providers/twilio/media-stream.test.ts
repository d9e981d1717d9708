import { describe, expect, it } from 'vitest';
import { ProviderError } from '../errors.ts';
import { twilioMediaStream as wire } from './media-stream.ts';
import { twilioSignature } from './telephony.ts';

const START = {
  event: 'start',
  sequenceNumber: '1',
  streamSid: 'MZ0001',
  start: {
    accountSid: 'AC0001',
    streamSid: 'MZ0001',
    callSid: 'CA0001',
    tracks: ['inbound'],
    customParameters: { callId: 'call-1', token: 'tok' },
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
  },
};

describe('Twilio media stream messages', () => {
  it('reads start with its call, stream and our parameters', () => {
    expect(wire.read(JSON.stringify(START))).toEqual({
      type: 'start',
      streamId: 'MZ0001',
      providerCallId: 'CA0001',
      parameters: { callId: 'call-1', token: 'tok' },
      format: { encoding: 'mulaw', sampleRate: 8000 },
    });
  });

  it('decodes inbound audio and ignores the outbound track', () => {
    const payload = Buffer.from([0xff, 0x7f, 0x00]).toString('base64');
    const media = (track: string) =>
      JSON.stringify({ event: 'media', streamSid: 'MZ0001', media: { track, chunk: '1', timestamp: '20', payload } });
    expect(wire.read(media('inbound'))).toEqual({ type: 'audio', audio: Buffer.from([0xff, 0x7f, 0x00]) });
    expect(wire.read(media('outbound'))).toEqual({ type: 'other' });
  });

  it('reads marks, keys, stop and connected', () => {
    expect(wire.read('{"event":"mark","streamSid":"MZ0001","mark":{"name":"m3"}}')).toEqual({ type: 'mark', name: 'm3' });
    expect(wire.read('{"event":"dtmf","streamSid":"MZ0001","dtmf":{"track":"inbound_track","digit":"#"}}')).toEqual({
      type: 'dtmf',
      digit: '#',
    });
    expect(wire.read('{"event":"stop","streamSid":"MZ0001","stop":{"callSid":"CA0001"}}')).toEqual({ type: 'stop' });
    expect(wire.read('{"event":"connected","protocol":"Call","version":"1.0.0"}')).toEqual({ type: 'other' });
  });

  it.each([
    ['not JSON', 'media payload'],
    ['an array', '[1,2]'],
    ['media without payload', '{"event":"media","media":{}}'],
    ['start without callSid', '{"event":"start","streamSid":"MZ1","start":{}}'],
    ['audio not μ-law', JSON.stringify({ ...START, start: { ...START.start, mediaFormat: { encoding: 'audio/l16', sampleRate: 16000 } } })],
    ['a key that is no key', '{"event":"dtmf","dtmf":{"digit":"12"}}'],
    ['an unknown event', '{"event":"surprise"}'],
  ])('refuses %s', (_, message) => {
    expect(() => wire.read(message)).toThrow(ProviderError);
  });

  it('writes media, mark and clear as Twilio reads them', () => {
    expect(JSON.parse(wire.audio('MZ0001', Buffer.from([1, 2, 3])))).toEqual({
      event: 'media',
      streamSid: 'MZ0001',
      media: { payload: 'AQID' },
    });
    expect(JSON.parse(wire.mark('MZ0001', 'm1'))).toEqual({ event: 'mark', streamSid: 'MZ0001', mark: { name: 'm1' } });
    expect(JSON.parse(wire.clear('MZ0001'))).toEqual({ event: 'clear', streamSid: 'MZ0001' });
  });

  it('verifies the upgrade signature over the stream URL with the auth token', () => {
    const url = 'wss://voice.example.com/api/v1/telephony/twilio/media';
    const signature = twilioSignature(url, {}, 'token-of-the-account');
    expect(wire.verifyUpgrade(url, { 'x-twilio-signature': signature }, { authToken: 'token-of-the-account' })).toBe(true);
    expect(wire.verifyUpgrade(url, { 'x-twilio-signature': signature }, { authToken: 'another-token-entirely' })).toBe(false);
    expect(wire.verifyUpgrade(`${url}x`, { 'x-twilio-signature': signature }, { authToken: 'token-of-the-account' })).toBe(false);
    expect(wire.verifyUpgrade(url, {}, { authToken: 'token-of-the-account' })).toBe(false);
    expect(wire.verifyUpgrade(url, { 'x-twilio-signature': signature }, {})).toBe(false);
  });
});
