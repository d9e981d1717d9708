import './recording.css';
import { useEffect, useState } from 'preact/hooks';
import { download } from './api.ts';
import { ErrorMessage, useLoad } from './ui.tsx';

/**
 * A call's recording, played in the page: the WAV is fetched through the API helper (its errors
 * shown in the API's own sentence) and played from a blob URL, freed when the player goes away.
 */
export function RecordingPlayer({ url, callId }: { url: string; callId: string }) {
  const file = useLoad(() => download(url.replace(/^\/api\/v1/, '')), [url]);
  const [source, setSource] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (!file.data) return;
    const blobUrl = URL.createObjectURL(file.data);
    setSource(blobUrl);
    return () => URL.revokeObjectURL(blobUrl);
  }, [file.data]);

  return (
    <figure class="call-recording">
      <figcaption>Recording: the contact on the left channel, the agent on the right.</figcaption>
      <ErrorMessage error={file.error} />
      {source ? (
        <>
          <audio controls preload="metadata" src={source} aria-label="Call recording" />
          <a href={source} download={`call-${callId}.wav`}>
            Download the recording (WAV)
          </a>
        </>
      ) : (
        !file.error && <p>Loading the recording…</p>
      )}
    </figure>
  );
}
