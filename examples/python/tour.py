"""A tour of Lull from Python: run a spec, read a scheduler audit log, load results files and run
a small sweep, printing tables. Every simulator figure is modelled.

    python examples/python/tour.py [RESULTS_DIR]

RESULTS_DIR is a directory written by `./lull reproduce --out DIR`; without it that step is
skipped. Run from the repository root."""

import sys
import tempfile

import pandas as pd

import lull

SPEC = "experiments/marz/tracking-10s.toml"

# 1. One spec, every model: power, energy and latency (modelled).
r = lull.sim.run(SPEC)
table = pd.DataFrame(
    {
        m: {
            "power mW": f["power_mw_mean"],
            "energy mJ": f["energy_mj"],
            "latency mean ms": f["latency_ms"]["mean"],
            "latency p99 ms": f["latency_ms"]["p99"],
            "wake-ups/s": f["wakeups_per_s"],
        }
        for m, f in r["models"].items()
    }
).T
print(f"{r['experiment']} on {r['platform']} (modelled, seed {r['seed']})")
print(table.round(2).to_string(), end="\n\n")

# 2. The simulator's scheduler audit log of one model, read back as a DataFrame.
with tempfile.TemporaryDirectory() as d:
    path, n = lull.sim.audit_logs(SPEC, d, models=["esm-kds-guis"])["esm-kds-guis"]
    log = lull.audit.read(path)
print(f"audit log: {len(log)} records, {int(log['gap_before'].sum())} gaps")
print(log.groupby("kind", observed=True).size().to_string(), end="\n\n")
busiest = log[log["kind"] == "switch_in"].groupby("comm", observed=True).size()
print("switch-ins by thread (top 5):")
print(busiest.sort_values(ascending=False).head(5).to_string(), end="\n\n")

# 3. Results files of `lull reproduce --out DIR`, one row per figure.
if len(sys.argv) > 1:
    res = lull.results.load(sys.argv[1])
    print(res.groupby(["section", "label"], observed=True).size().rename("figures").to_string())
    print()
else:
    print("(no RESULTS_DIR given: skipping lull.results.load)\n")

# 4. A small sweep: the two schedulers x two governors, three seeds, on every local core.
df = lull.sweep(
    {
        "spec": SPEC,
        "models": ["pull-16ms", "esm-kds-guis"],
        "seeds": 3,
        "overrides": {
            "policy.scheduler": ["cfs", "eevdf"],
            "policy.governor": ["ondemand", "schedutil"],
        },
    }
)
print(f"sweep: {df['run'].nunique()} runs (modelled, means over seeds)")
print(
    df.groupby(["policy.scheduler", "policy.governor", "model"], observed=True)[
        ["power_mw_mean", "latency_mean_ms", "latency_p99_ms"]
    ]
    .mean()
    .round(2)
    .to_string()
)
