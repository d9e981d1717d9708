import { pino } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type Logger = pino.Logger;

export interface LoggerOptions {
  /** Keeps stdout free for a command's own output (the CLI's JSON). */
  toStderr?: boolean;
  /** `pretty` for people, `json` for collectors; `auto` (the default) is pretty on a terminal only. */
  format?: 'auto' | 'pretty' | 'json';
}

/**
 * The service's logger. On a terminal each entry is one readable line (time, level, message and
 * its fields); anywhere else, one JSON object a line, which log collectors and the tests read.
 * Both write synchronously, so nothing logged before an exit is lost.
 */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  const fd = options.toStderr ? 2 : 1;
  const stream = fd === 2 ? process.stderr : process.stdout;
  const pretty = options.format === 'pretty' || ((options.format ?? 'auto') === 'auto' && stream.isTTY === true);
  const base = { pid: process.pid };
  if (!pretty) return pino({ level, base }, pino.destination({ dest: fd, sync: true }));
  return pino(
    { level, base },
    PinoPretty({
      destination: fd,
      sync: true,
      colorize: stream.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      // A request's line says its method, URL, status and time in words already.
      ignore: 'pid,hostname,reqId,request',
      singleLine: true,
    }),
  );
}
