// What the machine says about the run, from /proc (Linux; nulls elsewhere): memory and CPU of the
// processes measured, of PostgreSQL and of everything else, the load average; and pinning the load
// generator and the servers to separate CPUs (taskset).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import process from 'node:process';
import { round } from './numbers';

/** The 1/5/15-minute load averages (other work on the machine skews every figure; ratios less so). */
export const loadAverage = () => os.loadavg().map((n) => round(n, 2));

export interface Memory {
  rssMiB: number | null;
  hwmMiB: number | null;
}

/** VmRSS / VmHWM of a process in MiB. */
export function memory(pid: number): Memory {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssMiB: round(kib('VmRSS') / 1024, 1), hwmMiB: round(kib('VmHWM') / 1024, 1) };
  } catch {
    return { rssMiB: null, hwmMiB: null };
  }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** The fields of `/proc/<pid>/stat` from #3 (state) on: the command name before them, in parentheses, may hold spaces. */
const statFields = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ');

/** User + system CPU seconds from the text of `/proc/<pid>/stat`. */
function statCpuSeconds(stat: string): number {
  const fields = statFields(stat);
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // #14 utime, #15 stime
}

/** User and system CPU seconds a process has used so far (system: the kernel on its behalf, its socket writes). */
export function cpuTimes(pid: number): { user: number; system: number } | null {
  const stat = statOf(pid);
  if (stat === undefined) return null;
  const fields = statFields(stat);
  return { user: Number(fields[11]) / CLK_TCK, system: Number(fields[12]) / CLK_TCK };
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number | null {
  const stat = statOf(pid);
  return stat === undefined ? null : statCpuSeconds(stat);
}

/** CPU seconds all processes of the machine have used so far (/proc/stat). */
export function machineBusySeconds(): number | null {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + (steal || 0)) / CLK_TCK;
  } catch {
    return null;
  }
}

/** The text of `/proc/<pid>/stat`; undefined when there is no such process (or no /proc). */
function statOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The text of `/proc/<pid>/stat` of every process (those gone meanwhile left out). */
function everyStat(): Map<number, string> {
  const stats = new Map<number, string>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return stats;
  }
  for (const pid of pids) {
    const stat = statOf(Number(pid));
    if (stat !== undefined) stats.set(Number(pid), stat);
  }
  return stats;
}

const isPostgres = (stat: string) => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === 'postgres';

/**
 * CPU seconds per pid of the processes `pids` that are PostgreSQL's here (a pid of a server in a
 * container names another process, or none, and is left out, as are those gone), or else of every
 * local process named `postgres` (every server of the machine, whoever uses it).
 */
export function postgresCpu(pids?: number[]): Map<number, number> {
  const byPid = new Map<number, number>();
  const stats = pids ? pids.map((pid) => [pid, statOf(pid)] as const) : everyStat();
  for (const [pid, stat] of stats) if (stat && isPostgres(stat)) byPid.set(pid, statCpuSeconds(stat));
  return byPid;
}

/** The CPU seconds processes of `after` used since `before` (both `postgresCpu()` readings). */
export function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** The pid of every process whose parent is `parent`. */
export function childrenOf(parent: number): number[] {
  const found: number[] = [];
  for (const [pid, stat] of everyStat()) if (Number(statFields(stat)[1]) === parent) found.push(pid);
  return found;
}

/**
 * Pins the load generator (this process: autocannon runs in it) to CPU 0 and the given server
 * processes (every thread of each) to the other CPUs, so that the servers measured share only
 * their own cores and the load generator's work (parsing each response, headers included) is not
 * counted against the server that sends more of it. A process forked later by a pinned one (a
 * PostgreSQL backend of a pinned postmaster) inherits its CPUs. Returns the servers' CPU list, or
 * null when the machine has a single CPU or `taskset` is missing (nothing pinned then).
 */
export function pinProcesses(serverPids: number[]): string | null {
  // Every CPU of the machine (availableParallelism would give this process's, once pinned).
  const cpus = os.cpus().length;
  if (cpus < 2) return null;
  const servers = cpus === 2 ? '1' : `1-${cpus - 1}`;
  if (!setCpus('0', process.pid)) return null;
  for (const pid of serverPids) setCpus(servers, pid);
  return servers;
}

/** Undoes `pinProcesses`: this process and the given ones may run on every CPU again. */
export function unpinProcesses(pids: number[]): void {
  const all = `0-${os.cpus().length - 1}`;
  for (const pid of [process.pid, ...pids]) setCpus(all, pid);
}

/** Sets the CPUs of every thread of `pid` (`taskset`); false when that failed. */
function setCpus(list: string, pid: number): boolean {
  return spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' }).status === 0;
}

/** The open-file limits of a process (`Max open files` of /proc/<pid>/limits); null when unknown. */
export function openFileLimit(pid: number): { soft: number; hard: number } | null {
  try {
    const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    if (!line) return null;
    const value = (text: string) => (text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text));
    return { soft: value(line[1]), hard: value(line[2]) };
  } catch {
    return null;
  }
}

/**
 * Makes sure process `pid` may open `need` files: Node raises its own soft limit to the hard one
 * when it starts, so only a hard limit below `need` is a problem, which `prlimit` raises when this
 * process may (root). Throws, saying what to do, when it cannot. Returns the limits it leaves.
 */
export function ensureOpenFileLimit(pid: number, need: number): { soft: number; hard: number } | null {
  const limits = openFileLimit(pid);
  if (!limits || limits.soft >= need) return limits;
  const hard = Math.max(need, limits.hard);
  spawnSync('prlimit', ['--pid', String(pid), `--nofile=${need}:${hard}`], { stdio: 'ignore' });
  const raised = openFileLimit(pid);
  if (!raised || raised.soft < need)
    throw new Error(
      `process ${pid} may open ${limits.soft} files (hard limit ${limits.hard}) and needs ${need}: ` +
        `raise the hard limit (as root: \`ulimit -Hn ${need}\` in the shell that runs the bench) or open fewer streams`,
    );
  return raised;
}
