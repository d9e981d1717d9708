/**
 * A call's recording, as the calls module keeps it: the media pipeline hands it over in chunks as
 * the call goes (media/recording.ts makes them), every process serves it from the shared database
 * as a two-channel WAV, and a recurring job deletes it once its retention is over.
 */
import { addSeconds } from '../../platform/clock.ts';
import { withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { appError } from '../../platform/errors.ts';
import type { JobDefinition } from '../../platform/jobs.ts';
import { mulawToPcm16, wavHeader, type AudioFormat } from '../../platform/audio.ts';
import * as repo from './repo.ts';

/** A stretch of a recording: `frames` frames (one sample per channel), interleaved, caller first. */
export interface RecordingChunk {
  seq: number;
  audio: Buffer;
  frames: number;
}

/** Where a call's recording is fetched (GET, the call's own API path). */
export const recordingPath = (callId: string) => `/api/v1/call-logs/${callId}/recording`;

/**
 * Stores the next chunk of a call's recording. The first creates the recording, kept
 * `retentionDays` from now, and gives the call its recordingUrl in the same transaction: a call has
 * a recordingUrl exactly while it has a recording.
 */
export async function appendRecording(
  ctx: TenantCtx,
  callId: string,
  recording: { format: AudioFormat; retentionDays: number },
  chunk: RecordingChunk,
): Promise<void> {
  const now = ctx.clock.now();
  await withTransaction(ctx, async (txCtx) => {
    await repo.appendRecordingChunk(
      txCtx.db,
      ctx.tenantId,
      callId,
      {
        encoding: recording.format.encoding,
        sample_rate: recording.format.sampleRate,
        created_at: now,
        expires_at: addSeconds(now, recording.retentionDays * 86_400),
      },
      chunk,
    );
    if (chunk.seq === 0) await repo.setRecordingUrl(txCtx.db, ctx.tenantId, callId, recordingPath(callId));
  });
}

const CHANNELS = 2;

/**
 * The call's recording as a 16-bit PCM WAV file, caller left and agent right: its length in bytes
 * and its bytes, read from the database one chunk at a time (a two-hour call is not held whole).
 * 404 when the call is not the tenant's, or has no recording.
 */
export async function recordingWav(ctx: TenantCtx, callId: string): Promise<{ bytes: number; wav: AsyncIterable<Buffer> }> {
  const recording = await repo.findRecording(ctx.db, ctx.tenantId, callId);
  if (!recording) {
    if (!(await repo.findCall(ctx.db, ctx.tenantId, callId))) throw appError('NOT_FOUND', { what: 'Call' });
    throw appError('NOT_FOUND.recording', { callId });
  }
  // The recording as it was when asked: a call still going adds chunks the header does not count.
  const dataBytes = recording.frames * CHANNELS * 2;
  const toPcm16 = (audio: Uint8Array) =>
    recording.encoding === 'mulaw' ? mulawToPcm16(audio) : Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength);
  async function* wav(): AsyncGenerator<Buffer> {
    yield wavHeader(dataBytes, recording!.sample_rate, CHANNELS);
    let left = dataBytes;
    for (let seq = -1; left > 0;) {
      const chunk = await repo.recordingChunkAfter(ctx.db, ctx.tenantId, callId, seq);
      if (!chunk) throw new Error(`The recording of call ${callId} ended before its ${dataBytes} bytes.`);
      const pcm16 = toPcm16(chunk.audio).subarray(0, left);
      left -= pcm16.length;
      seq = chunk.seq;
      yield pcm16;
    }
  }
  return { bytes: 44 + dataBytes, wav: wav() };
}

/** Recordings deleted per statement: a few seconds of work at most, however many expired at once. */
const PURGE_BATCH = 100;

/** Deletes every recording whose retention is over by the clock's now; how many. */
export async function purgeExpiredRecordings(deps: Pick<Deps, 'db' | 'clock'>): Promise<number> {
  let purged = 0;
  for (;;) {
    const deleted = await repo.deleteExpiredRecordings(deps.db, deps.clock.now(), PURGE_BATCH);
    purged += deleted;
    if (deleted < PURGE_BATCH) return purged;
  }
}

export const PURGE_RECORDINGS = 'recordings.purge';

/** Hourly: a recording is gone within the hour after its retention ends. */
export const purgeRecordingsJob = (deps: Deps): JobDefinition<Record<string, never>> => ({
  name: PURGE_RECORDINGS,
  cron: '0 * * * *',
  async handle() {
    const purged = await purgeExpiredRecordings(deps);
    if (purged) deps.log.info({ purged }, 'expired call recordings deleted');
  },
});
