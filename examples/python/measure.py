"""Measures, on this machine, what docs/python.md reports:

- sweep throughput (simulated runs per second) of experiments/sweeps/tracking-policies.toml
  (512 runs) on 1, 2 and all local workers and on a Dask distributed LocalCluster started here;
- the time `lull.audit.read` takes for a log of at least 1 M records (the simulator's log of
  the pull model on the stylus spiral stretched to 3,000 s).

    python examples/python/measure.py [--quick]

--quick runs a quarter of the sweep. Run from the repository root."""

import os
import sys
import tempfile
import time
import tomllib

import lull
from lull import _sweep

SWEEP = "experiments/sweeps/tracking-policies.toml"
# Stretching the 60 s spiral 50 times gives the pull model ~1.1 M scheduling events.
LONG_SCALE_TO_MS = 3_000_000


def sweep_rate(grid, **kw):
    t = time.perf_counter()
    df = lull.sweep(grid, **kw)
    secs = time.perf_counter() - t
    runs = df["run"].nunique()
    return runs, secs, runs / secs


def main():
    quick = "--quick" in sys.argv
    grid = _sweep.load_file(SWEEP)
    if quick:
        grid.seeds = grid.seeds[: max(1, len(grid.seeds) // 4)]
    cores = os.cpu_count() or 1
    print(f"sweep {SWEEP}: machine with {cores} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'engine':<28} {'runs':>6} {'seconds':>8} {'runs/s':>8}")
    rows = [("local, 1 worker", dict(workers=1)), ("local, 2 workers", dict(workers=2)),
            (f"local, all ({cores}) workers", dict())]
    for name, kw in rows:
        runs, secs, rate = sweep_rate(grid, **kw)
        print(f"{name:<28} {runs:>6} {secs:>8.2f} {rate:>8.1f}")
    from distributed import LocalCluster

    t = time.perf_counter()
    with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        started = time.perf_counter() - t
        runs, secs, rate = sweep_rate(grid, engine="dask", address=cluster.scheduler_address)
    print(f"{f'dask LocalCluster, {cores} procs':<28} {runs:>6} {secs:>8.2f} {rate:>8.1f}"
          f"   (cluster start {started:.1f} s, not counted)")

    with open("experiments/marz/tracking-60s.toml", "rb") as f:
        spec = tomllib.load(f)
    spec["workload"]["scale_to_ms"] = LONG_SCALE_TO_MS
    with tempfile.TemporaryDirectory() as d:
        path, n = lull.sim.audit_logs(spec, d, models=["pull-16ms"])["pull-16ms"]
        size = os.path.getsize(path)
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            df = lull.audit.read(path)
            best = min(best, time.perf_counter() - t)
    print(f"lull.audit.read: {len(df)} records ({size / 1e6:.0f} MB) in {best:.2f} s (best of 3)")


if __name__ == "__main__":
    main()
