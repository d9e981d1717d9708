import { pino } from 'pino';

export type Logger = pino.Logger;

/** Logs to stdout by default; `toStderr` keeps stdout free for a command's own output (the CLI's JSON). */
export const createLogger = (level: string, options: { toStderr?: boolean } = {}): Logger =>
  options.toStderr
    ? pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 2, sync: true }))
    : pino({ level, base: { pid: process.pid } });
