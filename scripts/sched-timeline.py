#!/usr/bin/env python3
"""Where CPU time goes in a tracefs timeline (scripts/scx-trace.sh records one in the lab guest).

usage: sched-timeline.py TRACE [T0 T1]

The window is the hogs' life (first to last switch of a lull-hog thread) unless T0 T1 (trace
seconds) are given. Per CPU: idle time, and idle time while some task was runnable and not
running anywhere (CPU time a scheduler lost); switches. Per thread group (the name up to its
number): CPU time, run-queue waits (woken or preempted -> on a CPU: p50, p99, max) and how
often it was preempted. Affinity is not read: a wait of a task pinned elsewhere counts too."""
import re, sys, collections
LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$')
KV = re.compile(r'(\w+)=(\S+)')
def group(comm):
    for g in ('lull-hog', 'lull-scx', 'ksoftirqd', 'kworker', 'rcu', 'migration', 'swapper', 'lull-app', 'lull-driver', 'painting'):
        if comm.startswith(g): return g
    return comm
def parse(path):
    ev = []
    for l in open(path, errors='replace'):
        m = LINE.match(l)
        if not m: continue
        comm, pid, cpu, ts, name, rest = m.groups()
        if name == 'sched_switch':
            a, b = rest.split(' ==> ')
            pa = dict(KV.findall(a)); pb = dict(KV.findall(b))
            ev.append((float(ts), int(cpu), name, pa, pb))
        else:
            ev.append((float(ts), int(cpu), name, dict(KV.findall(rest)), None))
    return ev
def main(path):
    ev = parse(path)
    hog = [e[0] for e in ev if e[2]=='sched_switch' and (e[3].get('prev_comm','').startswith('lull-hog') or e[4].get('next_comm','').startswith('lull-hog'))]
    t0, t1 = (hog[0], hog[-1]) if hog else (ev[0][0], ev[-1][0])
    if len(sys.argv) > 3:
        t0, t1 = float(sys.argv[2]), float(sys.argv[3])
    running = {}   # cpu -> (pid, comm, since)
    waiting = {}   # pid -> (since, comm)
    comm_of = {}
    cpu_time = collections.Counter(); idle_lost = collections.Counter(); idle = collections.Counter()
    waits = collections.defaultdict(list); switches = collections.Counter(); preempt = collections.Counter()
    last_t = None
    def account(t):
        nonlocal last_t
        if last_t is None: last_t = t; return
        a, b = max(last_t, t0), min(t, t1)
        if b > a:
            for cpu, (pid, comm, _) in running.items():
                if pid == 0:
                    idle[cpu] += b - a
                    if waiting: idle_lost[cpu] += b - a
                else:
                    cpu_time[group(comm)] += b - a
        last_t = t
    for ts, cpu, name, a, b in ev:
        account(ts)
        if name in ('sched_wakeup', 'sched_wakeup_new'):
            pid = int(a['pid']); comm_of[pid] = a['comm']
            if pid not in [r[0] for r in running.values()]:
                waiting.setdefault(pid, (ts, a['comm']))
        elif name == 'sched_switch':
            pp, np_ = int(a['prev_pid']), int(b['next_pid'])
            if t0 <= ts <= t1:
                switches[cpu] += 1
                if a['prev_state'].startswith('R') and pp != 0: preempt[group(a['prev_comm'])] += 1
            if pp != 0 and a['prev_state'].startswith('R'):
                waiting[pp] = (ts, a['prev_comm'])
            else:
                waiting.pop(pp, None)
            if np_ in waiting:
                since, c = waiting.pop(np_)
                if t0 <= ts <= t1: waits[group(c)].append(ts - since)
            running[cpu] = (np_, b['next_comm'], ts)
    span = t1 - t0
    print(f'{path}: window {t0:.3f}..{t1:.3f} = {span*1e3:.1f} ms')
    for cpu in sorted(running):
        print(f'  cpu{cpu}: idle {idle[cpu]*1e3:.1f} ms, idle while a task waited {idle_lost[cpu]*1e3:.1f} ms, switches {switches[cpu]}')
    tot = sum(cpu_time.values())
    for g, t in cpu_time.most_common():
        w = sorted(waits.get(g, []))
        p = (lambda q: w[min(len(w)-1, int(q*len(w)))]*1e3) if w else (lambda q: 0)
        print(f'  {g:<22} cpu {t*1e3:9.1f} ms ({t/span/len(running)*100:5.1f} %)  runs {len(w):5d} wait p50 {p(.5):7.2f} p99 {p(.99):7.2f} max {p(1):7.2f} ms  preempted {preempt[g]}')
if __name__ == '__main__':
    main(sys.argv[1])
