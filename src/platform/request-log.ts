import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One log line per request, written when it is answered: method, URL, status and milliseconds
 * (Fastify's own are two, "incoming request" and "request completed", with less in them).
 * A dashboard session's successful reads are logged at debug: an open dashboard polls its pages
 * every few seconds, which at info was most of the log; what it changes or fails stays at info.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const fields = { request: { method: request.method, url: request.url, status: reply.statusCode, ms } };
    const text = `${request.method} ${request.url} ${reply.statusCode} ${ms} ms`;
    if (error) request.log.error({ ...fields, err: error }, text);
    else if (isDashboardRead(request, reply)) request.log.debug(fields, text);
    else request.log.info(fields, text);
  }
}

const isDashboardRead = (request: FastifyRequest, reply: FastifyReply) =>
  request.principal?.kind === 'session' && (request.method === 'GET' || request.method === 'HEAD') && reply.statusCode < 400;
