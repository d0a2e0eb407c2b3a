import { readdirSync, readFileSync } from "node:fs";

/** A set of processes whose CPU time is added up: given roots and all their descendants, and/or a process name. */
export interface CpuGroup {
  name: string;
  roots?: number[];
  /** The kernel's process name (`comm`), e.g. "postgres" or "nats-server". */
  comm?: string;
}

interface ProcessTicks {
  ppid: number;
  comm: string;
  ticks: number;
}

const TICKS_PER_SECOND = clockTicks();

function clockTicks(): number {
  try {
    const out = Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim();
    return Number(out) > 0 ? Number(out) : 100;
  } catch {
    return 100;
  }
}

/** Every process's user + system CPU ticks, from /proc; null where there is no /proc (not Linux). */
function sample(): Map<number, ProcessTicks> | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  const out = new Map<number, ProcessTicks>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      // Fields after "(comm)": state ppid … utime(14th field overall) stime(15th).
      const fields = stat.slice(close + 2).split(" ");
      out.set(Number(entry), {
        ppid: Number(fields[1]),
        comm: stat.slice(stat.indexOf("(") + 1, close),
        ticks: Number(fields[11]) + Number(fields[12]),
      });
    } catch {
      // The process ended between readdir and read.
    }
  }
  return out;
}

function members(group: CpuGroup, processes: Map<number, ProcessTicks>): Set<number> {
  const found = new Set<number>(group.roots?.filter((pid) => processes.has(pid)) ?? []);
  if (group.comm) for (const [pid, p] of processes) if (p.comm === group.comm) found.add(pid);
  if (group.roots?.length) {
    // Descendants too: `bun run start` runs the service as its child.
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, p] of processes) {
        if (!found.has(pid) && found.has(p.ppid)) {
          found.add(pid);
          grew = true;
        }
      }
    }
  }
  return found;
}

/** The machine's "cpu" line of /proc/stat: [busy, idle, steal] ticks over all CPUs. */
function machineTicks(): [number, number, number] | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number) as number[];
    return [user! + nice! + system! + irq! + softirq!, idle! + iowait!, steal ?? 0];
  } catch {
    return null;
  }
}

/**
 * CPU seconds each group used between `start()` and `stop()` (processes that end in between are not counted),
 * plus "machine": all busy CPU time of the machine, whoever used it, and "steal": CPU time the hypervisor gave
 * to other machines. Those two say whether something outside the benchmark disturbed it.
 */
export class CpuMeter {
  private before: Map<number, ProcessTicks> | null = null;
  private machineBefore: [number, number, number] | null = null;

  constructor(private readonly groups: CpuGroup[]) {}

  start(): void {
    this.before = sample();
    this.machineBefore = machineTicks();
  }

  stop(): Record<string, number> | null {
    const after = sample();
    const machineAfter = machineTicks();
    if (!after || !this.before) return null;
    const result: Record<string, number> = {};
    if (machineAfter && this.machineBefore) {
      result.machine = round((machineAfter[0] - this.machineBefore[0]) / TICKS_PER_SECOND);
      result.steal = round((machineAfter[2] - this.machineBefore[2]) / TICKS_PER_SECOND);
    }
    for (const group of this.groups) {
      let ticks = 0;
      for (const pid of members(group, after)) ticks += after.get(pid)!.ticks - (this.before.get(pid)?.ticks ?? 0);
      result[group.name] = round(ticks / TICKS_PER_SECOND);
    }
    return result;
  }
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
