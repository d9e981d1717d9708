import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * The dashboard (web/) is built in process by esbuild the first time it is asked for: no build
 * step beyond `npm ci`, nothing fetched at run time. One script and one stylesheet, minified,
 * kept with their gzip form and a content hash for caching.
 */
export interface Asset {
  body: Buffer;
  gzip: Buffer;
  contentType: string;
  etag: string;
}

export interface DashboardAssets {
  html: Asset;
  script: Asset;
  style: Asset;
  /** The browser call's microphone capture, an AudioWorklet module: it must be a script of its own. */
  captureWorklet: Asset;
}

const ENTRY = fileURLToPath(new URL('../../web/src/main.tsx', import.meta.url));
const CAPTURE_WORKLET = fileURLToPath(new URL('../../web/src/browser-call/capture-worklet.ts', import.meta.url));

const asset = (body: Buffer, contentType: string): Asset => ({
  body,
  gzip: gzipSync(body, { level: 9 }),
  contentType,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
});

const page = (scriptEtag: string, styleEtag: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>callforge</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css?v=${styleEtag.replaceAll('"', '')}">
<script type="module" src="/assets/app.js?v=${scriptEtag.replaceAll('"', '')}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The callforge dashboard needs JavaScript. The API is documented at <a href="/docs">/docs</a>.</noscript>
</body>
</html>
`;

export async function buildDashboard(): Promise<DashboardAssets> {
  const result = await build({
    entryPoints: [ENTRY, CAPTURE_WORKLET],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: 'out',
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const output = (name: string) => Buffer.from(result.outputFiles.find((file) => file.path.endsWith(`/${name}`))!.contents);
  const script = asset(output('main.js'), 'text/javascript; charset=utf-8');
  const style = asset(output('main.css'), 'text/css; charset=utf-8');
  const captureWorklet = asset(output('capture-worklet.js'), 'text/javascript; charset=utf-8');
  return { script, style, captureWorklet, html: asset(Buffer.from(page(script.etag, style.etag)), 'text/html; charset=utf-8') };
}

let built: Promise<DashboardAssets> | undefined;
/** Built once per process, on first use; a failed build is tried again next time. */
export function dashboardAssets(): Promise<DashboardAssets> {
  built ??= buildDashboard().catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}
