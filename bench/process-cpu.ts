/**
 * The CPU of a bench's server children: a quota for each, and a meter of what they and the
 * PostgreSQL server spent.
 *
 * A fixed CPU share for a server child, through a Linux control group: the child gets at most
 * `cores` cores' worth of time per period, whatever else the machine runs. This is how a bench on
 * one small machine shows what processes each given their own CPU (as on separate machines) do
 * together: without it, a second process on a 2-core machine only competes for the same cores.
 *
 * cgroup v2 (`cpu.max`) where the unified hierarchy has the cpu controller, else cgroup v1
 * (`cpu.cfs_quota_us`). Needs write access to the hierarchy (root, or a delegated subtree).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, onCleanup } from './harness.ts';

const PERIOD_US = 100_000;
const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/cpu';

export interface CpuQuota {
  cores: number;
  /** Moves a running process (every thread of it, and the children it starts later) into the group. */
  add: (pid: number) => void;
}

function hierarchy(): { root: string; limit: (dir: string, quotaUs: number) => void } {
  const controllers = join(V2_ROOT, 'cgroup.controllers');
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu')) {
    return {
      root: V2_ROOT,
      limit: (dir, quotaUs) => {
        writeFileSync(join(V2_ROOT, 'cgroup.subtree_control'), '+cpu');
        writeFileSync(join(dir, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
      },
    };
  }
  if (existsSync(join(V1_ROOT, 'cpu.cfs_quota_us'))) {
    return {
      root: V1_ROOT,
      limit: (dir, quotaUs) => {
        writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
      },
    };
  }
  throw new Error(`no cgroup cpu controller found under ${V2_ROOT} (v2) or ${V1_ROOT} (v1)`);
}

/** A new control group limited to `cores` (e.g. 0.5); removed at the bench's cleanup, once its processes are gone. */
export function cpuQuota(name: string, cores: number): CpuQuota {
  const { root, limit } = hierarchy();
  const dir = join(root, `callforge-bench-${process.pid}-${name}`);
  try {
    mkdirSync(dir);
    limit(dir, Math.round(cores * PERIOD_US));
  } catch (error) {
    throw new Error(
      `could not limit a process to ${cores} cores in ${dir} (${errorMessage(error)}): run as root, or set BENCH_SCALE_CORES=none`,
    );
  }
  onCleanup(`remove the control group ${dir}`, () => rmdirSync(dir));
  return { cores, add: (pid) => writeFileSync(join(dir, 'cgroup.procs'), String(pid)) };
}

/** The CPU so far, user and system, in ms, of what a `/proc/…/stat` file describes (a process, or one thread under task/). */
export function statCpuMs(statFile: string): number {
  const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms
}

/** A process's CPU so far (all its threads), in ms; 0 once it is gone. */
function processCpuMs(pid: number): number {
  try {
    return statCpuMs(`/proc/${pid}/stat`);
  } catch {
    return 0;
  }
}

/** The PostgreSQL server's processes now (the postmaster and its backends), by their command name. */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/**
 * CPU seconds spent from now until the returned function is called: by the given processes, and
 * by the local PostgreSQL server's (backends that end meanwhile are not counted).
 */
export function cpuMeter(pids: number[]): () => { processes: number; postgres: number } {
  const readPostgres = () => new Map(postgresPids().map((pid) => [pid, processCpuMs(pid)]));
  const before = pids.map(processCpuMs);
  const postgresBefore = readPostgres();
  return () => {
    const processes = pids.reduce((sum, pid, i) => sum + processCpuMs(pid) - before[i]!, 0);
    let postgres = 0;
    for (const [pid, ms] of readPostgres()) postgres += ms - (postgresBefore.get(pid) ?? 0);
    return { processes: processes / 1_000, postgres: postgres / 1_000 };
  };
}
