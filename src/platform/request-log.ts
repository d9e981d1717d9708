import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One log line per request, written when it is answered: method, URL, status and milliseconds
 * (Fastify's own are two, "incoming request" and "request completed", with less in them).
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const fields = { request: { method: request.method, url: request.url, status: reply.statusCode, ms } };
    const text = `${request.method} ${request.url} ${reply.statusCode} ${ms} ms`;
    if (error) request.log.error({ ...fields, err: error }, text);
    else request.log.info(fields, text);
  }
}
