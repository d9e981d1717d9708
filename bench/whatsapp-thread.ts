/**
 * The fake Graph API of bench/messaging.ts on a thread of its own (post-call-tenant.ts,
 * fakeWhatsAppOnThread): posts its URL once started, then answers `received` with the number of
 * messages it took.
 */
import { parentPort } from 'node:worker_threads';
import { startBenchWhatsApp } from './post-call-tenant.ts';

const graph = await startBenchWhatsApp();
parentPort!.on('message', (asked) => {
  if (asked === 'received') parentPort!.postMessage({ received: graph.messages.length });
});
parentPort!.postMessage({ url: graph.url });
