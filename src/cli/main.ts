import { runCli } from './program.ts';

// Entry point of `callforge` (bin/callforge.js). Writes are synchronous on files and pipes, so
// exiting right after leaves nothing unprinted; exiting explicitly leaves no handle to wait for.
const write = (stream: NodeJS.WriteStream) => (text: string) => void stream.write(text);
const code = await runCli(process.argv, { stdout: write(process.stdout), stderr: write(process.stderr) });
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
process.exit(code);
