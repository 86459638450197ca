import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

// Summary of a V8 .cpuprofile (what `node --cpu-prof` writes): the functions with the most
// self time (samples whose top frame is the function) and total time (samples with the
// function anywhere on the stack, counted once per sample). Used by `npm run bench --
// --cpu-prof`; also runnable on its own: `npx tsx bench/cpu-profile.ts <file.cpuprofile> [top]`.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  /** `name (file:line)`, the file relative to the project (or `pkg/file` inside node_modules). */
  fn: string;
  selfMs: number;
  selfPct: number;
  totalMs: number;
  totalPct: number;
}

export interface ProfileSummary {
  file: string;
  /** Sampled time in ms, idle excluded. */
  busyMs: number;
  idleMs: number;
  gcMs: number;
  bySelf: FunctionTime[];
  byTotal: FunctionTime[];
}

const PSEUDO = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

function where(url: string, line: number, root: string): string {
  if (!url) return '';
  let path = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) path = path.slice(nm + '/node_modules/'.length);
  else if (path.startsWith('/')) path = relative(root, path);
  return `${path}:${line + 1}`;
}

export function summarizeCpuProfile(file: string, root: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const keyOf = new Map<number, string>();
  for (const n of profile.nodes) {
    const cf = n.callFrame;
    const name = cf.functionName || '(anonymous)';
    const at = where(cf.url, cf.lineNumber, root);
    keyOf.set(n.id, at ? `${name} (${at})` : name);
  }
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let idle = 0;
  let gc = 0;
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // timeDeltas[i] is the time before sample i; the next delta is this sample's duration.
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    const key = keyOf.get(id) ?? '?';
    if (key === '(idle)') {
      idle += dt;
      continue;
    }
    busy += dt;
    if (key === '(garbage collector)') gc += dt;
    self.set(key, (self.get(key) ?? 0) + dt);
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const k = keyOf.get(n)!;
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + dt);
    }
  }
  const pct = (ms: number) => (busy > 0 ? Math.round((ms / busy) * 1000) / 10 : 0);
  const row = (fn: string): FunctionTime => {
    const s = self.get(fn) ?? 0;
    const t = total.get(fn) ?? 0;
    return { fn, selfMs: Math.round(s), selfPct: pct(s), totalMs: Math.round(t), totalPct: pct(t) };
  };
  const rank = (m: Map<string, number>, skipPseudo: boolean) =>
    [...m.entries()]
      .filter(([k]) => !(skipPseudo && PSEUDO.has(k)))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k]) => row(k));
  return {
    file,
    busyMs: Math.round(busy),
    idleMs: Math.round(idle),
    gcMs: Math.round(gc),
    bySelf: rank(self, false),
    byTotal: rank(total, true),
  };
}

export function formatProfileSummary(s: ProfileSummary): string {
  const lines = [`CPU profile ${s.file}: ${s.busyMs} ms busy (GC ${s.gcMs} ms), ${s.idleMs} ms idle`, '  self %  total %  function'];
  for (const r of s.bySelf) lines.push(`  ${r.selfPct.toFixed(1).padStart(6)}  ${r.totalPct.toFixed(1).padStart(7)}  ${r.fn}`);
  lines.push('  by total time (on the stack):');
  for (const r of s.byTotal) lines.push(`  ${r.selfPct.toFixed(1).padStart(6)}  ${r.totalPct.toFixed(1).padStart(7)}  ${r.fn}`);
  return lines.join('\n');
}

if (process.argv[1] && /cpu-profile\.(ts|js)$/.test(process.argv[1])) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: npx tsx bench/cpu-profile.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(`${formatProfileSummary(summarizeCpuProfile(file, process.cwd(), top ? Number(top) : 25))}\n`);
}
