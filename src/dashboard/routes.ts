import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DASHBOARD_POLICY, pageHeaders } from '../platform/page-security.ts';
import { dashboardAssets, type Asset, type DashboardAssets } from './assets.ts';

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset, cache: string) {
  reply
    .header('content-type', asset.contentType)
    .header('etag', asset.etag)
    .header('cache-control', cache)
    .header('vary', 'accept-encoding');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(asset.gzip);
  return reply.send(asset.body);
}

const wantsHtml = (request: FastifyRequest) => /\btext\/html\b/.test(String(request.headers.accept ?? ''));

/**
 * The dashboard at `/` for browsers (which ask for text/html); other clients keep getting the
 * service description. Pages are hash routes, so no other path is taken from the gateway.
 */
export function registerDashboard(app: FastifyInstance, describeService: () => object) {
  const open = { auth: 'public' as const, rateLimit: false as const };
  const assetRoute = (path: string, pick: (assets: DashboardAssets) => Asset, cache = 'public, max-age=31536000, immutable') =>
    app.get(path, { config: open, schema: { hide: true } }, async (request, reply) =>
      send(request, reply, pick(await dashboardAssets()), cache),
    );
  app.get('/', { config: open, schema: { hide: true } }, async (request, reply) => {
    if (!wantsHtml(request)) return describeService();
    pageHeaders(reply, DASHBOARD_POLICY);
    return send(request, reply, (await dashboardAssets()).html, 'no-cache');
  });
  assetRoute('/assets/app.js', (assets) => assets.script);
  assetRoute('/assets/app.css', (assets) => assets.style);
  // Named by the script rather than the page, so its URL carries no version: revalidated by its etag instead.
  assetRoute('/assets/capture-worklet.js', (assets) => assets.captureWorklet, 'no-cache');
}
