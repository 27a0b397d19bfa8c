#!/bin/sh
# Records where CPU time goes in seed 003's painting scenario, under EEVDF and under lull-scx,
# inside the lab guest (docs/scx.md, "Where the CPU time goes"):
#   cargo build --release -p lull-cli -p lull-apps -p lull-scx --bins
#   lull lab vm --out DIR -- env HOGS=2 sh scripts/scx-trace.sh
#   python3 scripts/sched-timeline.py DIR/lull-scx.trace
# Per scheduler it leaves in $LULL_VM_OUT: the tracefs timeline (sched_switch, sched_wakeup,
# migrations, exits), /proc/stat and /proc/schedstat before and after, sched_ext's event
# counters, `lull live vtcfs`'s JSON and lull-scx's own counts.
set -e
OUT=${LULL_VM_OUT:?run inside the lab guest: lull lab vm --out DIR -- sh scripts/scx-trace.sh}
HOGS=${HOGS:-2}
EVENTS=${EVENTS:-150}
BIN=${BIN:-$(pwd)/target/release}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
# 8 MiB a CPU holds a 15 s painting run at TCG's switch rates (no overrun: see */tracestats).
echo 8192 > $T/buffer_size_kb
for s in ${SCHEDS:-eevdf lull-scx}; do
  if [ "$s" = lull-scx ]; then
    "$BIN/lull-scx" --stats-json "$OUT/$s.stats.json" 2> "$OUT/$s.scx.err" &
    SCX=$!
    while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ]; do sleep 0.1; done
  fi
  echo > $T/trace
  echo 0 > $T/events/enable
  for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task sched_process_exit; do
    echo 1 > $T/events/sched/$e/enable
  done
  cat /proc/stat > "$OUT/$s.stat0"
  cat /proc/schedstat > "$OUT/$s.schedstat0"
  cat /sys/kernel/sched_ext/root/events > "$OUT/$s.events0" 2>/dev/null || true
  echo 1 > $T/tracing_on
  "$BIN/lull" live vtcfs --hogs "$HOGS" --policy stock --events "$EVENTS" --json > "$OUT/$s.json" 2> "$OUT/$s.err"
  echo 0 > $T/tracing_on
  cat /proc/stat > "$OUT/$s.stat1"
  cat /proc/schedstat > "$OUT/$s.schedstat1"
  cat /sys/kernel/sched_ext/root/events > "$OUT/$s.events1" 2>/dev/null || true
  cat $T/per_cpu/cpu*/stats > "$OUT/$s.tracestats"
  cat $T/trace > "$OUT/$s.trace"
  if [ "$s" = lull-scx ]; then kill -INT $SCX; wait $SCX; fi
done
