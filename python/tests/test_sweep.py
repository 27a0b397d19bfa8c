import os

import pandas as pd
import pytest

import lull
from lull.errors import SweepError


def grid(tiny):
    return {
        "spec": tiny,
        "overrides": {"policy.scheduler": ["cfs", "eevdf"], "app.handler_cycles": [100000, 400000]},
        "seeds": [1, 2],
    }


def test_the_grid_is_the_cartesian_product(tiny):
    df = lull.sweep(grid(tiny), workers=2)
    assert len(df) == 2 * 2 * 2 * 2  # 2 x 2 points x 2 seeds x 2 models
    assert df["run"].nunique() == 8
    assert set(df["policy.scheduler"]) == {"cfs", "eevdf"}
    assert set(df["model"]) == {"pull-16ms", "esm"}
    for col in ["power_mw_mean", "energy_mj", "latency_mean_ms", "latency_p99_ms",
                "wakeups_per_s"]:
        assert df[col].notna().all(), col
    # A handler four times as costly keeps the CPUs busier: more energy for the same workload.
    e = df.groupby("app.handler_cycles")["energy_mj"].mean()
    assert e[400000] > e[100000]


def test_one_worker_and_many_give_the_same_table(tiny):
    pd.testing.assert_frame_equal(lull.sweep(grid(tiny), workers=1), lull.sweep(grid(tiny)))


def test_an_unknown_key_names_it_and_the_valid_ones(tiny):
    g = grid(tiny)
    g["overrides"]["app.handler_cylces"] = [1]
    with pytest.raises(SweepError, match=r"unknown override key `app.handler_cylces`.*app\.handler_cycles"):
        lull.sweep(g)


def test_bad_grids_fail_before_anything_runs(tiny):
    bad = [
        {**grid(tiny), "colour": 1},
        {**grid(tiny), "seeds": []},
        {**grid(tiny), "seeds": [-1]},
        {**grid(tiny), "overrides": {"policy.scheduler": []}},
        {**grid(tiny), "overrides": {"seed": [1, 2]}},
        {**grid(tiny), "overrides": {"policy.scheduler": ["cfs", "bfs"]}},
        {"overrides": {}},
        "not a grid",
    ]
    for g in bad:
        with pytest.raises(SweepError):
            lull.sweep(g)
    for kwargs in ({"engine": "spark"}, {"workers": 0}, {"out": "table.xlsx"},
                   {"address": "tcp://x:1"}):
        with pytest.raises(SweepError):
            lull.sweep(grid(tiny), **kwargs)


def test_ray_is_refused_with_the_reason(tiny):
    with pytest.raises(SweepError, match="engine='ray' is not supported.*dask"):
        lull.sweep(grid(tiny), engine="ray")


def test_the_table_is_written(tiny, tmp_path):
    df = lull.sweep(grid(tiny), out=tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv")
    assert len(back) == len(df) and list(back.columns) == list(df.columns)
    pytest.importorskip("pyarrow")
    lull.sweep(grid(tiny), out=tmp_path / "t.parquet")
    assert len(pd.read_parquet(tmp_path / "t.parquet")) == len(df)


def test_a_sweep_file_from_the_command_line(tiny, tmp_path, root, capsys):
    f = tmp_path / "s.toml"
    spec = os.path.join(root, "experiments/marz/tracking-10s.toml")
    f.write_text(
        f'spec = "{spec}"\nmodels = ["esm"]\nseeds = 2\n[overrides]\n"policy.governor" = ["ondemand", "schedutil"]\n'
    )
    from lull._sweep import main

    assert main([str(f), "--out", str(tmp_path / "o.csv")]) == 0
    assert "4 runs in" in capsys.readouterr().out
    f.write_text(f'spec = "{spec}"\n[overrides]\n"policy.gouvernor" = ["schedutil"]\n')
    assert main([str(f)]) == 2
    assert "unknown override key `policy.gouvernor`" in capsys.readouterr().err


def test_callable_after_importing_the_module(tiny):
    import lull.sweep

    assert len(lull.sweep({"spec": tiny, "seeds": [1]})) == 2


def test_dask_on_a_local_cluster_equals_local(tiny):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        on_dask = lull.sweep(grid(tiny), engine="dask", address=cluster.scheduler_address)
    pd.testing.assert_frame_equal(on_dask, lull.sweep(grid(tiny)))


def test_an_axis_that_changes_no_figure_is_reported(root):
    import warnings

    from lull._sweep import inert_axes
    from lull.errors import SweepWarning

    spec = os.path.join(root, "experiments/marz/tracking-10s.toml")
    g = {"spec": spec, "models": ["esm"], "seeds": [1, 2],
         "overrides": {"cpu.main_cores": [1, 4], "policy.scheduler": ["cfs", "eevdf"]}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = lull.sweep(g, workers=2)
    # The trace is a recording: the seeds change nothing. The scheduler changes the figures on
    # one core (threads contend), so it is not reported although it changes nothing on four.
    assert df.attrs["inert_axes"] == ["seed"]
    msgs = [str(w.message) for w in caught if issubclass(w.category, SweepWarning)]
    assert len(msgs) == 1 and "the seeds changed no figure" in msgs[0]
    one_core = df[df["cpu.main_cores"] == 1]
    assert inert_axes(one_core, ["policy.scheduler"]) == ["seed"]
    four = df[df["cpu.main_cores"] == 4]
    assert inert_axes(four, ["policy.scheduler"]) == ["policy.scheduler", "seed"]
    # One changed figure in one run is enough for an axis to count.
    changed = four.copy()
    changed.loc[changed.index[0], "energy_mj"] += 1.0
    assert inert_axes(changed, ["policy.scheduler"]) == []
