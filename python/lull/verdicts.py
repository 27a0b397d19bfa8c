"""The seeds' headline figures against the simulator's: one sensitivity sweep per study over the
model's uncertain parameters, on the sweep engine (Dask by default), and the evidence file the
report's scoreboard reads (docs/seed-verdicts.md).

``python -m lull.verdicts [--engine dask|local] [--workers N] [--address A] [--quick]
[--out FILE.json]``

A *study* is a base spec and its *axes* (a dotted spec key and the values to try, one of them
the default, with the range that is plausible for the seed's hardware and the source that says
so). Every point of the axes' product is run once (the simulator is deterministic for a seed),
and each of the study's *claims* (a seed figure) is computed from each run. The evidence per
claim: our figure at the defaults, each axis's one-at-a-time figures (the others at their
defaults), the points at which the seed's figure holds (within the claim's tolerance and of the
same sign), how many of them lie inside every axis's plausible range, and the cause in words
built from those numbers. Nothing here is fitted: the axes' values and plausible ranges are
fixed below with their sources before any run.
"""

import copy
import dataclasses
import datetime
import itertools
import json
import math
import os
import sys
import time
import tomllib
from dataclasses import dataclass, field

from . import _inputs, _lull
from ._sweep import _set, run_calls
from .errors import LullError, SweepError

#: The evidence file's format version (the report's reader checks it).
EVIDENCE_VERSION = 1

#: Where the evidence goes by default (relative to the repository's root); the report reads it.
DEFAULT_OUT = "experiments/verdicts/evidence.json"


@dataclass(frozen=True)
class Axis:
    key: str
    label: str
    values: tuple
    default: object
    #: The range plausible for the seed's hardware (inclusive), and its source.
    plausible: tuple
    source: str

    def is_plausible(self, v):
        lo, hi = self.plausible
        return lo <= v <= hi


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    #: The seed's figure and where it says so.
    seed: float
    seed_source: str
    unit: str
    #: Reproduced when |ours - seed| <= tolerance (in `unit`) and, for a change, of the same sign.
    tolerance: float
    signed: bool
    #: The function of a run's result (``lull.sim.run``'s dict) that gives our figure.
    figure: str
    #: A measurement method of the seed's that inflates its figure, computed from its numbers.
    method: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Study:
    id: str
    spec: str
    #: Spec edits before the axes (fewer models or loads: only what the claims read).
    base: dict
    axes: tuple
    claims: tuple


# -- our figures from a run's result ----------------------------------------------------------


def _change_pct(new, old):
    # The same arithmetic as `lull_model::stats::change_pct`, which the report's scoreboard uses.
    return (new - old) / old * 100.0


def ucsg_energy_change(r):
    m = r["models"]
    return _change_pct(m["ucsg"]["energy_mj"], m["cfs-ondemand"]["energy_mj"])


def ucsg_big_share(r):
    return r["models"]["ucsg"]["big_cluster_pct"]


def cfs_od_big_share(r):
    return r["models"]["cfs-ondemand"]["big_cluster_pct"]


def painting_cfs_mean(r):
    return r["models"]["cfs"]["response_ms"]["mean"]


def painting_change(model):
    def f(r):
        m = r["models"]
        return _change_pct(m[model]["response_ms"]["mean"], m["cfs"]["response_ms"]["mean"])

    return f


def interbench_burn_max(model):
    def f(r):
        for c in r["cells"]:
            if c["model"] == model and c["load"] == "burn":
                return c["latency_ms"]["max"]
        raise KeyError(f"no {model}/burn cell")

    return f


def marz_power_change(r):
    m = r["models"]
    return _change_pct(m["esm-kds-guis"]["power_mw_mean"], m["pull-16ms"]["power_mw_mean"])


def best_toggle_period_s(r):
    toggles = [m for m in r["models"] if m["model"].startswith("toggle-")]
    best = max(toggles, key=lambda m: m["speedup_pct"])
    return float(best["model"].removeprefix("toggle-").removesuffix("s"))


FIGURES = {
    "ucsg_energy_change": ucsg_energy_change,
    "ucsg_big_share": ucsg_big_share,
    "cfs_od_big_share": cfs_od_big_share,
    "painting_cfs_mean": painting_cfs_mean,
    "painting_vtcfs_c3_change": painting_change("vtcfs-c3"),
    "painting_vtcfs_c10_change": painting_change("vtcfs-c10"),
    "interbench_cfs_burn_max": interbench_burn_max("cfs"),
    "interbench_vtcfs_burn_max": interbench_burn_max("vtcfs-3ms"),
    "marz_power_change": marz_power_change,
    "best_toggle_period_s": best_toggle_period_s,
}


# -- seed 000's method: V^2/R across the sense resistor --------------------------------------


def squared_current_correction(reduction_mw, reduction_pct, shunt_ohm=0.005, supply_v=12.0):
    """Seed 000 reports power as V^2/R of the voltage across its 0.005-ohm sense resistor (its
    eq. for mW), which is I^2 R: proportional to the square of the board's current, not to its
    power V_supply x I. From its own numbers: the pull model's level (reduction in mW over
    reduction in %), the current that level implies through the shunt, what that current would
    draw from the board's 12 V supply, and the power change that the reported ratio of I^2
    means (the square root of the ratio)."""
    frac = reduction_pct / 100.0
    pull_mw = reduction_mw / frac
    current_a = math.sqrt(pull_mw / 1000.0 / shunt_ohm)
    return {
        "reported_reduction_pct": -reduction_pct,
        "implied_pull_mw": pull_mw,
        "implied_current_a": current_a,
        "implied_board_w_at_12v": current_a * supply_v,
        "power_change_pct": (math.sqrt(1.0 - frac) - 1.0) * 100.0,
    }


# -- the studies -------------------------------------------------------------------------------

S4_WORK = Axis(
    "apps.file_manager_work_pct",
    "file manager's work per action (% of the ESTIMATE)",
    (25, 50, 100, 200, 400, 800, 1300),
    100,
    (50, 1333),
    "seed 001 §4.1 / Table II: open and close 'took 1 s and 0.5 s'; read as work at big's top "
    "(1.6 GHz) that is 1.6 G cycles per open, 1333 % of our 120 M; half our ESTIMATE as the floor",
)
S4_B2L = Axis(
    "ucsg.big_to_little_periods",
    "UCSG periods below big's lowest level before LITTLE",
    (1, 2, 3, 5),
    3,
    (3, 3),
    "seed 001 §3.2.3: this period and the two before it",
)
S4_BIG_DPC = Axis(
    "platform_overrides.clusters.big.dynamic_power_coefficient",
    "Cortex-A15 dynamic power coefficient",
    (200, 310, 450),
    310,
    (250, 400),
    "Linux exynos5422-cpus.dtsi: 310 for the A15 (the 5410 has no mainline tree; +-25 % for "
    "the sibling part)",
)
S4_LITTLE_DPC = Axis(
    "platform_overrides.clusters.little.dynamic_power_coefficient",
    "Cortex-A7 dynamic power coefficient",
    (60, 90, 130),
    90,
    (70, 110),
    "Linux exynos5422-cpus.dtsi: 90 for the A7 (+-25 % for the sibling part)",
)
ZIP_CPB = Axis(
    "apps.zip_cycles_per_byte",
    "ZIP's cycles per byte",
    (190, 380, 570, 800),
    190,
    (190, 600),
    "lzbench zlib -6 on Silesia (about 115 cycles/byte on Skylake, /0.6 for A15 IPC) as the "
    "floor; seed 001 figure 8's ZIP of about 24 s on big at 1.6 GHz (570 cycles/byte if it were "
    "all CPU) as the ceiling",
)
VIDEO_CPP = Axis(
    "apps.video_decode_cycles_per_pixel",
    "video decoder's cycles per pixel",
    (15, 25, 40, 60),
    25,
    (15, 50),
    "ESTIMATE of ucsg/apps/video.rs (FFmpeg-class software decoding of 640x360)",
)
UP_THR = Axis(
    "ucsg.up_threshold_pct",
    "UCSG's up threshold (%)",
    (60, 75, 90),
    75,
    (60, 90),
    "seed 001 §3.2.3 fn. 10 derives 75 from the S4 ondemand's 60 % (LITTLE) and 90 % (big)",
)
PAINT = Axis(
    "painting.paint_cycles",
    "painting app's work per touch, C (cycles)",
    (60_000_000, 120_000_000, 165_000_000, 240_000_000, 330_000_000),
    120_000_000,
    (96_000_000, 165_000_000),
    "seed 003 §IV: C is 100 ms on average (120 M at 1.2 GHz); its figure 6 leaves 136 ms "
    "for C + L_I + L_S (275.9 ms less 50.56 % preemption), at most 165 M cycles",
)
HOGS = Axis(
    "painting.hogs",
    "CPU hogs beside the app",
    (1, 2, 3, 4),
    2,
    (2, 2),
    "seed 003 §VI-B-1: two nice-0 tasks in infinite loops",
)
BURN = Axis(
    "burn_threads",
    "Burn's threads (interbench -L)",
    (1, 2, 3, 4, 6),
    4,
    (4, 4),
    "interbench 0.31's default -L 4; seed 003 names no other",
)
REPEATS = Axis(
    "repeats",
    "interbench runs per load (max over them)",
    (1, 10),
    1,
    (10, 10),
    "seed 003 §VI-B-2: ten runs of 30 s",
)
TK1_REST = Axis(
    "platform_overrides.board.rest_mw",
    "Jetson TK1 board beyond the SoC (mW)",
    (0, 500, 1000),
    1000,
    (800, 1200),
    "eLinux.org 'Jetson/Jetson TK1 Power': the board idles at about 1.6 W, the SoC 0.6 W of it",
)
TK1_DISPLAY = Axis(
    "platform_overrides.display.on_mw",
    "display path (mW)",
    (0, 600),
    600,
    (0, 600),
    "eLinux.org 'Jetson/Jetson TK1 Power': a graphical desktop adds about 0.6 W",
)
POLL = Axis(
    "framework.app_poll_cycles",
    "pull model's app poll (cycles)",
    (60_000, 240_000, 1_000_000, 4_000_000),
    60_000,
    (15_000, 240_000),
    "an empty poll is a system call and a return, microseconds on an A15 (lmbench-class ARMv7 "
    "figures); up to four times our ESTIMATE of 30 us at 2 GHz",
)
HUB_POLL = Axis(
    "framework.hub_poll_cycles",
    "pull model's hub poll (cycles)",
    (30_000, 120_000, 500_000, 2_000_000),
    30_000,
    (7_500, 120_000),
    "as the app poll: up to four times our ESTIMATE",
)
HOT = Axis(
    "hot_kib",
    "a thread's hot set refilled after a cluster change (KiB)",
    (16, 64, 256, 1024, 2048),
    64,
    (16, 2048),
    "PARSEC (Bienia et al., PACT 2008) gives Blackscholes small working sets; up to the A15's "
    "2 MiB L2 (Exynos 5422)",
)
WORK = Axis(
    "work_ms",
    "each thread's work (ms on a big core)",
    (500, 1500, 5000, 15000),
    1500,
    (500, 15000),
    "seed 004 states no run time; PARSEC's input sets run seconds to minutes",
)
DRAM = Axis(
    "platform_overrides.costs.dram_latency_ns",
    "DRAM latency of a refill (ns)",
    (60, 100, 200),
    100,
    (80, 150),
    "LPDDR3 of the Odroid-XU3; ESTIMATE of platforms/odroid-xu3.toml",
)

#: The Marz claims' tolerance, percentage points: under a third of the smallest change the seed
#: reports (5.2 %), and of the smallest after its V^2/R is undone (2.6 %) not much more than half.
MARZ_TOLERANCE_PP = 1.5

#: A claimed time's tolerance, a share of the seed's figure: the VT-CFS and interbench times are
#: read off the seed's plots, so a point within 15 % of them reproduces the figure.
TIME_TOLERANCE_SHARE = 0.15


def _change_claim(id, title, seed, seed_source, figure, tolerance_pp=5.0, method=None):
    """A claimed change in percent: it holds within ``tolerance_pp`` points and of the same sign."""
    return Claim(id, title, seed, seed_source, "%", tolerance_pp, True, figure, method or {})


def _time_claim(id, title, seed_ms, seed_source, figure):
    """A claimed time in ms: it holds within ``TIME_TOLERANCE_SHARE`` of the seed's."""
    return Claim(id, title, seed_ms, seed_source, "ms", TIME_TOLERANCE_SHARE * seed_ms, False, figure)


def _share_claim(id, title, seed_pct, seed_source, figure):
    """A claimed share of time in percent (unsigned): it holds within 5 points."""
    return Claim(id, title, seed_pct, seed_source, "%", 5.0, False, figure)


STUDIES = (
    *(
        Study(
            f"ucsg-fm{suffix}",
            f"experiments/ucsg/fig6-fm-{behind}.toml",
            {"models": ["cfs-ondemand", "ucsg"]},
            (S4_WORK, S4_B2L, S4_BIG_DPC, S4_LITTLE_DPC),
            (
                _change_claim(
                    f"ucsg_energy_fm_{behind}",
                    f"UCSG energy, file manager with {label} behind",
                    seed,
                    "seed 001 figure 6",
                    "ucsg_energy_change",
                ),
            ),
        )
        for suffix, behind, label, seed in (("", "none", "nothing", -31.4), ("-ftp", "ftp", "FTP", -22.6))
    ),
    Study(
        "ucsg-fig8",
        "experiments/ucsg/fig8-video-zip.toml",
        {"models": ["cfs-ondemand", "ucsg"]},
        (ZIP_CPB, VIDEO_CPP, UP_THR),
        (
            _share_claim(
                "ucsg_big_share_video_zip",
                "UCSG share of time on big cores, video + ZIP",
                14.3,
                "seed 001 figure 8 (§4.5)",
                "ucsg_big_share",
            ),
            _share_claim(
                "cfs_od_big_share_video_zip",
                "CFS+OD share of time on big cores, video + ZIP",
                23.8,
                "seed 001 figure 8 (§4.5)",
                "cfs_od_big_share",
            ),
        ),
    ),
    Study(
        "painting",
        "experiments/vtcfs/painting.toml",
        {"models": ["cfs", "vtcfs-c3", "vtcfs-c10"]},
        (PAINT, HOGS),
        (
            _time_claim(
                "vtcfs_painting_cfs",
                "VT-CFS painting response time under CFS",
                275.9,
                "seed 003 figure 6 (§VI-B-1)",
                "painting_cfs_mean",
            ),
            *(
                _change_claim(
                    f"vtcfs_painting_c{c}",
                    f"VT-CFS painting response time, C = {c}",
                    seed,
                    "seed 003 §VI-B-1",
                    f"painting_vtcfs_c{c}_change",
                )
                for c, seed in ((3, -12.6), (10, -31.4))
            ),
        ),
    ),
    Study(
        "interbench-gaming",
        "experiments/vtcfs/interbench-gaming.toml",
        {"loads": ["burn"], "duration_s": 30},
        (BURN, REPEATS),
        tuple(
            _time_claim(
                f"interbench_gaming_burn_{model}",
                f"interbench gaming max latency under burn, {label}",
                seed_ms,
                "seed 003 §VI-B-2",
                f"interbench_{model}_burn_max",
            )
            for model, label, seed_ms in (("cfs", "CFS", 94.3), ("vtcfs", "VT-CFS", 90.68))
        ),
    ),
    *(
        Study(
            f"marz-{secs}s",
            f"experiments/marz/tracking-{secs}s.toml",
            {"models": ["pull-16ms", "esm-kds-guis"]},
            (TK1_REST, TK1_DISPLAY, POLL, HUB_POLL),
            (
                _change_claim(
                    f"marz_power_tracking_{secs}s",
                    f"Marz ESM+KDS+guiS power vs pull, tracking {secs} s",
                    -pct,
                    "seed 000 chapter 6 (stylus tracking)",
                    "marz_power_change",
                    MARZ_TOLERANCE_PP,
                    squared_current_correction(mw, pct),
                ),
            ),
        )
        for secs, mw, pct in ((10, 41.3, 5.2), (20, 117.9, 15.3), (60, 184.7, 22.9))
    ),
    Study(
        "toggling",
        "experiments/toggling/blackscholes.toml",
        {},
        (HOT, WORK, DRAM),
        (
            Claim(
                "toggling_best_period",
                "toggling period with the best result",
                0.25,
                "seed 004 figure 3.9 (§3.3)",
                "s",
                0.0,
                False,
                "best_toggle_period_s",
            ),
        ),
    ),
)


# -- running -----------------------------------------------------------------------------------


def run_point(text, seed, figure_names):
    """One point of a study (a worker runs this): each named figure of the run's result."""
    result = json.loads(_lull.run_spec(text, "verdict sweep", seed, None))
    return {name: FIGURES[name](result) for name in figure_names}


def holds(claim, value):
    """The verdict rule on one figure: within the tolerance of the seed's and, for a signed
    figure (a change), of the same sign."""
    if value is None or not math.isfinite(value):
        return False
    if claim.signed and (value < 0) != (claim.seed < 0):
        return False
    return abs(value - claim.seed) <= claim.tolerance + 1e-9


def points(study, quick):
    axes = [a if not quick else _quick(a) for a in study.axes]
    return axes, [dict(zip([a.key for a in axes], vs)) for vs in itertools.product(*(a.values for a in axes))]


def _quick(axis):
    """The axis cut to its default and its two ends (the suite's short sweep)."""
    vs = sorted({axis.values[0], axis.default, axis.values[-1]})
    return Axis(axis.key, axis.label, tuple(vs), axis.default, axis.plausible, axis.source)


def study_tasks(study, root, quick):
    base = tomllib.loads(_inputs.read_text(os.path.join(root, study.spec), "spec"))
    for k, v in study.base.items():
        _set(base, k, v)
    axes, pts = points(study, quick)
    tasks = []
    for p in pts:
        spec = copy.deepcopy(base)
        for k, v in p.items():
            _set(spec, k, v)
        where = f"{study.spec} with {p}"
        text = _lull.spec_json_to_toml(json.dumps(spec), where)
        try:
            _lull.check_any_spec(text, where)
        except LullError as e:
            raise SweepError(str(e)) from None
        tasks.append((p, text, base.get("seed", 1)))
    return axes, tasks


def evidence_of(study, axes, pts, outputs):
    """Each claim's evidence from the study's runs."""
    defaults = {a.key: a.default for a in axes}
    at_default = next(o for p, o in zip(pts, outputs) if p == defaults)
    out = {}
    for c in study.claims:
        ours = at_default[c.figure]
        sens = []
        for a in axes:
            figs = []
            for v in a.values:
                want = dict(defaults, **{a.key: v})
                figs.append(next(o[c.figure] for p, o in zip(pts, outputs) if p == want))
            sens.append(
                {
                    "key": a.key,
                    "label": a.label,
                    "values": list(a.values),
                    "figures": figs,
                    "span": max(figs) - min(figs),
                    "default": a.default,
                    "plausible": list(a.plausible),
                    "source": a.source,
                }
            )
        sens.sort(key=lambda s: -s["span"])
        holding = [p for p, o in zip(pts, outputs) if holds(c, o[c.figure])]
        plausible = [p for p in holding if all(a.is_plausible(p[a.key]) for a in axes)]
        region = {a.key: sorted({p[a.key] for p in holding}) for a in axes}
        # The holding points nearest the defaults (fewest axes moved), as the cause shows them.
        nearest = sorted(holding, key=lambda p: sum(p[k] != defaults[k] for k in p))[:3]
        e = {
            "title": c.title,
            "study": study.id,
            "spec": study.spec,
            "seed": c.seed,
            "seed_source": c.seed_source,
            "unit": c.unit,
            "tolerance": c.tolerance,
            "signed": c.signed,
            "ours_at_defaults": ours,
            "reproduced_at_defaults": holds(c, ours),
            "points": len(pts),
            "holding_points": len(holding),
            "plausible_holding_points": len(plausible),
            "region": region if holding else None,
            "plausible_example": plausible[0] if plausible else None,
            "nearest_holding": [
                {k: v for k, v in p.items() if v != defaults[k]} for p in nearest
            ],
            "sensitivity": sens,
        }
        if c.method:
            # The seed's figure as a power change (its method undone), and where that holds.
            corrected = dataclasses.replace(c, seed=c.method["power_change_pct"])
            e["method"] = dict(
                c.method,
                ours_holds_at_defaults=holds(corrected, ours),
                holding_points=sum(holds(corrected, o[c.figure]) for o in outputs),
            )
        e["cause"] = cause_text(c, e, axes)
        out[c.id] = e
    return out


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def cause_text(c, e, axes):
    """The cause in words, built only from the evidence's numbers."""
    top = e["sensitivity"][0]
    figs = ", ".join(f"{_fmt(v)} -> {_fmt(f)}" for v, f in zip(top["values"], top["figures"]))
    parts = [
        f"most sensitive to {top['label']} (`{top['key']}`: {figs} {c.unit})",
    ]
    if e["region"] is None:
        parts.append(
            f"no swept point gives the seed's {_fmt(c.seed)} {c.unit} (within {_fmt(c.tolerance)})"
        )
    else:
        near = "; ".join(
            "at the defaults" if not p else ", ".join(f"{k} = {_fmt(v)}" for k, v in p.items())
            for p in e["nearest_holding"]
        )
        parts.append(
            f"the seed's figure holds at {e['holding_points']} of {e['points']} points, "
            f"nearest the defaults: {near}"
        )
        parts.append(
            f"{e['plausible_holding_points']} of them within every plausible range"
            + (
                f", e.g. {e['plausible_example']}"
                if e["plausible_example"]
                else " (none plausible for the seed's hardware)"
            )
        )
    if "method" in e:
        m = e["method"]
        parts.append(
            f"the seed's V^2/R squares the current: its {_fmt(m['reported_reduction_pct'])} % "
            f"is a {_fmt(m['power_change_pct'])} % power change, and its {_fmt(m['implied_pull_mw'])} mW "
            f"would mean {_fmt(m['implied_current_a'])} A through the 0.005-ohm shunt "
            f"({_fmt(m['implied_board_w_at_12v'])} W at 12 V); against that corrected figure "
            f"ours {'holds' if m['ours_holds_at_defaults'] else 'differs'} at the defaults and "
            f"{m['holding_points']} of {e['points']} points hold"
        )
    return "; ".join(parts)


def run(engine="dask", workers=None, address=None, quick=False, root=".", studies=None):
    """Runs every study (or those named) and returns the evidence dict."""
    chosen = [s for s in STUDIES if studies is None or s.id in studies]
    plans = [(s, *study_tasks(s, root, quick)) for s in chosen]
    calls = []
    for s, _axes, tasks in plans:
        names = sorted({c.figure for c in s.claims})
        calls.extend((text, seed, names) for _p, text, seed in tasks)
    workers = workers or os.cpu_count() or 1
    started = time.perf_counter()
    outputs = run_calls(run_point, calls, engine, workers, address)
    secs = time.perf_counter() - started
    claims = {}
    i = 0
    for s, axes, tasks in plans:
        outs = outputs[i : i + len(tasks)]
        i += len(tasks)
        claims.update(evidence_of(s, axes, [t[0] for t in tasks], outs))
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "version": EVIDENCE_VERSION,
        "label": "modelled",
        "command": "python -m lull.verdicts" + (" --quick" if quick else "")
        + f" --engine {engine}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "engine": engine,
        "workers": workers,
        "runs": len(calls),
        "elapsed_s": secs,
        "load_average_at_end": list(load) if load else None,
        "claims": claims,
    }


def table(evidence):
    """One line per claim: the seed's figure, ours, whether it holds, the cause."""
    lines = []
    for cid, e in evidence["claims"].items():
        lines.append(
            f"{cid}: seed {_fmt(e['seed'])} {e['unit']}, ours {_fmt(e['ours_at_defaults'])} "
            f"{e['unit']} ({'holds' if e['reproduced_at_defaults'] else 'differs'}); {e['cause']}"
        )
    return "\n".join(lines)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m lull.verdicts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="dask", choices=("local", "dask"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--address", default=None)
    ap.add_argument("--quick", action="store_true", help="each axis at its ends and default only")
    ap.add_argument("--root", default=".", help="the repository (for experiments/)")
    ap.add_argument("--out", default=None, help=f"the evidence file (default {DEFAULT_OUT})")
    ap.add_argument("--study", action="append", help="run only these studies (ids)")
    args = ap.parse_args(argv)
    out = args.out or os.path.join(args.root, DEFAULT_OUT)
    try:
        ev = run(args.engine, args.workers, args.address, args.quick, args.root, args.study)
    except LullError as e:
        print(f"python -m lull.verdicts: {e}", file=sys.stderr)
        return 2
    print(table(ev))
    print(
        f"{ev['runs']} runs in {ev['elapsed_s']:.1f} s on {ev['workers']} {ev['engine']} "
        f"worker(s); load average {ev['load_average_at_end']}"
    )
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(ev, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
