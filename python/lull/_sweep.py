"""Sweeps: a base spec, overrides (dotted keys -> lists of values) and seeds, expanded into their
cartesian product, each run on an engine, gathered into one table.

Engines: ``local`` runs on every core of this machine with threads (the native module releases
the interpreter while it simulates); ``dask`` runs on a Dask distributed cluster, one started here
(``address=None``) or the scheduler at ``address``. Ray is not supported (docs/python.md says
why)."""

import copy
import itertools
import json
import os
import time
import tomllib
import warnings
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from . import _inputs, _lull
from .errors import InputError, LullError, SweepError, SweepWarning

ENGINES = ("local", "dask", "ray")

#: Figures of each model's result that become columns, as (column, path into the result).
FIGURES = (
    ("power_mw_mean", ("power_mw_mean",)),
    ("power_mw_max_1ms", ("power_mw_max_1ms",)),
    ("cpu_power_mw_mean", ("cpu_power_mw_mean",)),
    ("energy_mj", ("energy_mj",)),
    ("duration_ms", ("duration_ms",)),
    ("latency_mean_ms", ("latency_ms", "mean")),
    ("latency_p99_ms", ("latency_ms", "p99")),
    ("latency_max_ms", ("latency_ms", "max")),
    ("frame_latency_mean_ms", ("frame_latency_ms", "mean")),
    ("frame_latency_p99_ms", ("frame_latency_ms", "p99")),
    ("events_injected", ("events_injected",)),
    ("events_handled", ("events_handled",)),
    ("events_dropped", ("events_dropped",)),
    ("wakeups_per_s", ("wakeups_per_s",)),
    ("frames_drawn", ("frames_drawn",)),
    ("cluster_switches", ("cluster_switches",)),
    ("idle_forced_ms", ("idle_forced_ms",)),
    ("sim_events", ("sim_events",)),
)

_OUT_SUFFIXES = (".parquet", ".csv")

#: The spec table that changes the named platform's figures (`[platform_overrides]`, any kind).
PLATFORM_OVERRIDES = "platform_overrides"


def _leaf_keys(table, prefix=""):
    keys = []
    for k, v in table.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            keys.extend(_leaf_keys(v, path + "."))
        else:
            keys.append(path)
    return keys


def _set(table, dotted, value):
    *parents, leaf = dotted.split(".")
    for p in parents:
        table = table.setdefault(p, {})
    table[leaf] = value


class Grid:
    """A checked sweep: the base spec as a dict, the override axes, seeds and models."""

    def __init__(self, base, overrides, seeds, models, origin):
        self.base = base
        self.overrides = overrides
        self.seeds = seeds
        self.models = models
        self.origin = origin

    @classmethod
    def of(cls, grid, relative_to=None):
        """Checks a grid dict: ``{"spec": path-or-dict, "overrides": {key: [values]},
        "seeds": [ints] or a count, "models": [names] (optional)}``."""
        if not isinstance(grid, dict):
            raise SweepError(f"a sweep grid is a dict, not {type(grid).__name__}")
        unknown = sorted(set(grid) - {"spec", "overrides", "seeds", "models"})
        if unknown:
            raise SweepError(
                f"unknown sweep key(s) {', '.join(unknown)} (known: spec, overrides, seeds, models)"
            )
        if "spec" not in grid:
            raise SweepError("a sweep needs `spec`: the base spec's path or dict")
        spec = grid["spec"]
        if isinstance(spec, (str, os.PathLike)):
            path = os.fspath(spec)
            if relative_to is not None and not os.path.isabs(path):
                path = os.path.join(relative_to, path)
            base = _read_toml(path, "spec", f"spec {path}")
            origin = path
        elif isinstance(spec, dict):
            base, origin = copy.deepcopy(spec), "spec dict"
        else:
            raise SweepError(f"spec is a path or a dict, not {type(spec).__name__}")
        overrides = grid.get("overrides", {})
        if not isinstance(overrides, dict):
            raise SweepError("overrides is a table of dotted spec keys -> lists of values")
        valid = sorted(set(_leaf_keys(base)) | set(_lull.optional_spec_keys()))
        for key, values in overrides.items():
            if key == "seed":
                raise SweepError("`seed` is not an override: list the seeds in `seeds`")
            # The platform's figures: the simulator's reader checks each key against the profile.
            if key not in valid and not key.startswith(PLATFORM_OVERRIDES + "."):
                raise SweepError(
                    f"unknown override key `{key}` for {origin}; valid keys: {', '.join(valid)}"
                )
            if not isinstance(values, list) or not values:
                raise SweepError(f"override `{key}`: give a non-empty list of values")
        seeds = grid.get("seeds", [base.get("seed", 1)])
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            if seeds < 1:
                raise SweepError(f"seeds: a count must be at least 1, not {seeds}")
            seeds = list(range(1, seeds + 1))
        if not isinstance(seeds, list) or not seeds:
            raise SweepError("seeds: a non-empty list of seeds, or a count")
        try:
            seeds = [_inputs.seed(s, "seeds") for s in seeds]
        except LullError as e:
            raise SweepError(str(e)) from None
        models = grid.get("models")
        if models is not None and (
            not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models)
        ):
            raise SweepError("models: a non-empty list of model names")
        return cls(base, dict(overrides), seeds, models, origin)

    def tasks(self):
        """Every run as ``(point, seed, spec_text)``, each spec checked by the simulator's reader
        before anything runs."""
        keys = list(self.overrides)
        texts = []
        for values in itertools.product(*(self.overrides[k] for k in keys)):
            spec = copy.deepcopy(self.base)
            point = dict(zip(keys, values))
            for k, v in point.items():
                _set(spec, k, v)
            where = f"{self.origin} with {point}" if point else self.origin
            try:
                text = _lull.spec_json_to_toml(json.dumps(spec, allow_nan=False), where)
                _lull.check_spec(text, where, self.models)
            except (LullError, TypeError, ValueError) as e:
                raise SweepError(str(e)) from None
            texts.append((point, text))
        return [(point, seed, text) for point, text in texts for seed in self.seeds]


def run_task(text, seed, models):
    """One run: each model's figures as a list of dicts (a worker runs this)."""
    result = json.loads(_lull.run_spec(text, "sweep run", seed, models))
    rows = []
    for model, figures in result["models"].items():
        row = {"model": model}
        for column, path in FIGURES:
            v = figures
            for p in path:
                v = v[p]
            row[column] = v
        rows.append(row)
    return rows


def _table(tasks, outputs):
    rows = []
    for run, ((point, seed, _), out) in enumerate(zip(tasks, outputs)):
        for r in out:
            rows.append({"run": run, **point, "seed": seed, **r})
    df = pd.DataFrame(rows)
    df["model"] = df["model"].astype("category")
    return df


def inert_axes(df, keys):
    """The axes among ``keys`` (override columns) and ``"seed"`` that change no figure anywhere:
    for every setting of the other axes and every model, all of the axis's values give exactly
    the same figures. An axis with one value is not counted."""
    figures = [c for c, _ in FIGURES if c in df.columns]
    inert = []
    for axis in [*keys, "seed"]:
        if axis not in df.columns or df[axis].nunique(dropna=False) < 2:
            continue
        others = [k for k in [*keys, "seed"] if k != axis] + ["model"]
        spread = df.groupby(others, observed=True, dropna=False)[figures].nunique(dropna=False)
        if len(spread) and int(spread.to_numpy().max()) <= 1:
            inert.append(axis)
    return inert


def _warn_inert(df, keys):
    inert = inert_axes(df, keys)
    for axis in inert:
        what = "the seeds" if axis == "seed" else f"the override {axis!r}"
        hint = (
            "nothing random in the spec reaches a figure (e.g. a recorded trace): one seed is enough"
            if axis == "seed"
            else "no figure depends on it here (e.g. a scheduler with no contention): vary "
            "something the result depends on, or drop the axis"
        )
        warnings.warn(f"sweep: {what} changed no figure in any run; {hint}", SweepWarning,
                      stacklevel=3)
    df.attrs["inert_axes"] = inert


def _local(tasks, models, workers):
    return run_calls(run_task, [(t[2], t[1], models) for t in tasks], "local", workers, None)


def run_calls(fn, calls, engine, workers, address):
    """``fn(*args)`` for every ``args`` of ``calls``, in order, on ``engine`` (``local``: a thread
    pool of ``workers``; ``dask``: a cluster at ``address``, or a ``LocalCluster`` of
    ``workers`` processes started here). ``fn`` must be a module-level function (Dask pickles
    it by name)."""
    if engine == "local":
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda a: fn(*a), calls))
    return _dask_calls(fn, calls, workers, address)


def _dask(tasks, models, workers, address):
    return _dask_calls(run_task, [(t[2], t[1], models) for t in tasks], workers, address)


def _dask_calls(fn, calls, workers, address):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SweepError(
            "engine='dask' needs Dask distributed: pip install 'dask[distributed]'"
        ) from None
    cluster = None
    try:
        if address is None:
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        else:
            client = Client(address)
    except (OSError, TimeoutError, ValueError) as e:
        if cluster is not None:
            cluster.close()
        raise SweepError(f"engine='dask': cannot reach the cluster at {address}: {e}") from None
    try:
        if not calls:
            return []
        futures = client.map(fn, *[list(col) for col in zip(*calls)], pure=False)
        return client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(grid, engine="local", address=None, workers=None, out=None, *, relative_to=None):
    """Runs a sweep and returns one pandas table: a row per run and model with ``run``, the
    override values (one column per dotted key), ``seed``, ``model`` and the model's figures
    (power, energy, latency mean/p99/max, frame latency, events, wake-ups/s, frames, ...), all
    modelled. ``engine``: ``"local"`` (threads on every core, or ``workers``) or ``"dask"``
    (``address`` of a scheduler, or a local cluster of ``workers`` processes started here).
    ``out``: also write the table to a ``.parquet`` or ``.csv`` file. Raises ``SweepError`` for
    a bad grid, key, engine or output before any run starts, ``SpecError`` for a run the
    simulator refuses. Warns (``SweepWarning``) for each axis — an override or the seeds — that
    changed no figure in any run; ``df.attrs["inert_axes"]`` lists them."""
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r} (known: local, dask)")
    if engine == "ray":
        raise SweepError(
            "engine='ray' is not supported: Lull sweeps run on Dask distributed "
            "(engine='dask'; docs/python.md says why)"
        )
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SweepError(f"workers must be a positive int, not {workers!r}")
    if address is not None and engine != "dask":
        raise SweepError("address applies to engine='dask'")
    if out is not None and not os.fspath(out).endswith(_OUT_SUFFIXES):
        raise SweepError(f"out must end in .parquet or .csv, not {os.fspath(out)!r}")
    g = grid if isinstance(grid, Grid) else Grid.of(grid, relative_to)
    tasks = g.tasks()
    workers = workers or os.cpu_count() or 1
    if engine == "local":
        outputs = _local(tasks, g.models, workers)
    else:
        outputs = _dask(tasks, g.models, workers, address)
    df = _table(tasks, outputs)
    _warn_inert(df, list(g.overrides))
    if out is not None:
        path = os.fspath(out)
        if path.endswith(".parquet"):
            df.to_parquet(path, index=False)
        else:
            df.to_csv(path, index=False)
    return df


def load_file(path):
    """A sweep file (TOML: ``spec``, ``seeds``, ``models``, ``[overrides]``) as a checked grid;
    the spec's path is relative to the file."""
    table = _read_toml(path, "sweep", path)
    return Grid.of(table, relative_to=os.path.dirname(os.path.abspath(path)))


def _read_toml(path, what, where):
    """The TOML file at ``path`` (``what`` kind of input, for its size limit); a file that cannot
    be read or is not TOML is a ``SweepError`` (naming ``where``)."""
    try:
        return tomllib.loads(_inputs.read_text(path, what))
    except InputError as e:
        raise SweepError(str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{where}: not TOML: {e}") from None


def main(argv=None):
    """``python -m lull.sweep SWEEP.toml [--engine local|dask] [--address A] [--workers N]
    [--out FILE.parquet|.csv]``."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m lull.sweep", description=main.__doc__)
    ap.add_argument("sweep_file")
    ap.add_argument("--engine", default="local", choices=ENGINES)
    ap.add_argument("--address", default=None, help="a Dask scheduler, e.g. tcp://host:8786")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", default=None, help="write the table to FILE.parquet or FILE.csv")
    args = ap.parse_args(argv)
    warnings.simplefilter("always", SweepWarning)
    warnings.showwarning = lambda message, *_: print(message, file=sys.stderr)
    try:
        grid = load_file(args.sweep_file)
        started = time.perf_counter()
        df = sweep(grid, engine=args.engine, address=args.address, workers=args.workers,
                   out=args.out)
        secs = time.perf_counter() - started
    except LullError as e:
        print(f"python -m lull.sweep: {e}", file=sys.stderr)
        return 2
    runs = df["run"].nunique()
    keys = list(grid.overrides)
    summary = (
        df.groupby(keys + ["model"], observed=True)[
            ["power_mw_mean", "energy_mj", "latency_mean_ms", "latency_p99_ms", "wakeups_per_s"]
        ].mean()
        if keys
        else df.groupby("model", observed=True).mean(numeric_only=True)
    )
    print(f"modelled: means over {len(grid.seeds)} seed(s)")
    print(summary.to_string(float_format=lambda x: f"{x:.2f}"))
    print(f"{runs} runs in {secs:.2f} s ({runs / secs:.1f} runs/s, engine {args.engine})")
    if args.out:
        print(f"wrote {args.out}")
    return 0
