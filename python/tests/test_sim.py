import os

import pytest

import lull
from lull.errors import InputError, LullError, SpecError


def test_run_by_path(root):
    r = lull.sim.run(os.path.join(root, "experiments/marz/tracking-10s.toml"), models=["esm"])
    assert r["kind"] == "framework" and r["label"] == "modelled"
    assert list(r["models"]) == ["esm"]
    assert r["models"]["esm"]["events_handled"] == r["models"]["esm"]["events_injected"] > 0


def test_a_dict_runs_as_its_toml_file(tiny, tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(
        """kind = "framework"
experiment = "tiny"
description = "the stylus spiral scaled to 300 ms"
platform = "jetson-tk1"
seed = 1
models = ["pull-16ms", "esm"]
tail_ms = 50
[cpu]
main_cores = 2
companion = false
[app]
handler_cycles = 150000
draw_cycles = 400000
cache_kib = 256
[workload]
kind = "trace"
trace = "stylus-spiral"
scale_to_ms = 300
"""
    )
    assert lull.sim.run(tiny) == lull.sim.run(path)


def test_seed_and_models_override(tiny):
    r = lull.sim.run(tiny, seed=9, models=["pull-16ms"])
    assert r["seed"] == 9 and list(r["models"]) == ["pull-16ms"]


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda s: s.pop("description"), "missing field `description`"),
        (lambda s: s.update(platform="vax"), "unknown platform `vax`"),
        (lambda s: s.update(models=["teletype"]), "unknown model `teletype`"),
        (lambda s: s["cpu"].update(main_cores=99), "cpu.main_cores"),
        (lambda s: s.update(seed=None), "seed: None"),
        (lambda s: s.update(colour="blue"), "unknown field `colour`"),
    ],
)
def test_bad_specs_are_spec_errors(tiny, change, words):
    change(tiny)
    with pytest.raises(SpecError, match=words.replace("(", r"\(")):
        lull.sim.run(tiny)


def test_bad_arguments_are_spec_errors(tiny):
    for kwargs in ({"seed": -1}, {"seed": "1"}, {"models": "esm"}, {"models": ["vsync-batched"]}):
        with pytest.raises(SpecError):
            lull.sim.run(tiny, **kwargs)
    with pytest.raises(SpecError):
        lull.sim.run(42)
    with pytest.raises(InputError, match="spec /nonexistent/spec.toml: cannot open"):
        lull.sim.run("/nonexistent/spec.toml")
    assert issubclass(SpecError, LullError)


def _header(kind, platform):
    return {"kind": kind, "experiment": f"small-{kind}", "description": "a small spec of its kind",
            "platform": platform, "seed": 1}


#: One small spec of every kind (each runs in well under a second), and a figure its result has.
SMALL = {
    "ucsg": ({**_header("ucsg", "galaxy-s4"), "models": ["cfs-ondemand", "ucsg"], "tail_ms": 0,
              "scenario": {"foreground": "home", "screen": "on", "start_ms": 0,
                           "duration_ms": 500}},
             lambda r: r["models"]["ucsg"]["thread_cpu_ms"]["ucsgd"] > 0
             and "ucsgd" not in r["models"]["cfs-ondemand"]["thread_cpu_ms"]),
    "painting": ({**_header("painting", "tegra-250"), "models": ["cfs", "vtcfs-c3"],
                  "painting": {"hogs": 2, "touches": 3, "start_ms": 100, "interval_ms": 500,
                               "jitter_ms": 100, "preempt_tick_us": 3000}},
                 lambda r: r["models"]["cfs"]["response_ms"]["mean"] > 0
                 and "seed_003_reported" in r),
    "interbench": ({**_header("interbench", "tegra-250"), "benchmark": "audio", "loads": ["none"],
                    "duration_s": 1, "repeats": 1, "ram_mib": 1024,
                    "models": [{"name": "cfs", "policy": {"scheduler": "cfs",
                                                          "governor": "performance"}}]},
                   lambda r: r["cells"][0]["samples"] > 0),
    "hackbench": ({**_header("hackbench", "tegra-250"), "transports": ["pipe"], "pairs": [20],
                   "loops": 3, "models": [
                       {"name": "cfs", "policy": {"scheduler": "cfs", "governor": "performance"}},
                       {"name": "vtcfs-5ms", "policy": {"scheduler": "vtcfs",
                                                        "preempt_tick_us": 5000,
                                                        "governor": "performance"}}]},
                  lambda r: len(r["runs"]) == 2 and r["runs"][0]["elapsed_s"] > 0),
    "toggling": ({**_header("toggling", "odroid-xu3"), "threads": 4, "work_ms": 20,
                  "hot_kib": 64, "models": ["baseline", "toggle-0.1s"]},
                 lambda r: [m["model"] for m in r["models"]] == ["baseline", "toggle-0.1s"]
                 and r["models"][0]["completion_s"] > 0),
}


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_every_kind_runs(kind):
    spec, check = SMALL[kind]
    r = lull.sim.run(spec)
    assert r["kind"] == kind and r["label"] == "modelled"
    assert r["experiment"] == f"small-{kind}"
    assert check(r), r
    # The same spec with another seed runs too, and the seed is the one given.
    assert lull.sim.run(spec, seed=5)["seed"] == 5


def test_the_framework_kind_runs_with_its_reductions(tiny):
    r = lull.sim.run(tiny)
    assert r["kind"] == "framework"
    assert set(r["reduction_of"]["esm"]) == {"pull-16ms"}


def test_a_model_subset_of_another_kind(root):
    spec, _ = SMALL["hackbench"]
    r = lull.sim.run(spec, models=["vtcfs-5ms"])
    assert {x["model"] for x in r["runs"]} == {"vtcfs-5ms"}
    with pytest.raises(SpecError, match="`eevdf` is not one of this spec's models"):
        lull.sim.run(spec, models=["eevdf"])
    toggling, _ = SMALL["toggling"]
    with pytest.raises(SpecError, match="keep `baseline`"):
        lull.sim.run(toggling, models=["toggle-0.1s"])


def test_every_shipped_spec_says_its_kind(root):
    import tomllib

    kinds = {}
    for d in ("marz", "ucsg", "toggling", "vtcfs"):
        for name in sorted(os.listdir(os.path.join(root, "experiments", d))):
            with open(os.path.join(root, "experiments", d, name), "rb") as f:
                kinds.setdefault(tomllib.load(f)["kind"], []).append(name)
    assert set(kinds) == set(SMALL) | {"framework"}


def test_a_spec_without_kind_is_told_which_to_add(tiny):
    del tiny["kind"]
    with pytest.raises(SpecError, match='no `kind`: add `kind = "framework"`'):
        lull.sim.run(tiny)
    scenario = dict(SMALL["ucsg"][0])
    del scenario["kind"]
    with pytest.raises(SpecError, match='add `kind = "ucsg"`.*the kinds are framework, ucsg, '
                                        'painting, interbench, hackbench, toggling'):
        lull.sim.run(scenario)


@pytest.mark.parametrize("kind, words", [
    ("radio", "unknown kind `radio` \\(the kinds are framework, ucsg"),
    (3, "kind must be a string"),
    ("ucsg", "unknown field `app`, expected one of `models`, `tail_ms`, `scenario`"),
])
def test_a_wrong_kind_is_a_spec_error(tiny, kind, words):
    tiny["kind"] = kind
    with pytest.raises(SpecError, match=words):
        lull.sim.run(tiny)


def test_a_spec_file_error_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('kind = "painting"\nexperiment = "x"\ndescription = "d"\n'
                    'platform = "tegra-250"\nseed = -1\n')
    with pytest.raises(SpecError, match=f"{path}:5:8: invalid value: integer `-1`, expected u64"):
        lull.sim.run(path)


def test_options_a_kind_has_no_use_for_are_refused():
    spec, _ = SMALL["painting"]
    with pytest.raises(SpecError, match="an audit log does not apply to a painting spec"):
        lull.sim.audit_logs(spec, "/nonexistent-dir-never-written")


def test_audit_logs_of_a_toggling_spec(tmp_path):
    spec, _ = SMALL["toggling"]
    written = lull.sim.audit_logs(spec, tmp_path)
    assert set(written) == {"baseline", "toggle-0.1s"}
    path, records = written["baseline"]
    assert path.endswith("small-toggling-baseline.audit") and records > 0
    assert len(lull.audit.read(path)) == records


def test_rtapp(root):
    path = os.path.join(root, "experiments/validation/two-hogs-nice.json")
    r = lull.sim.rtapp(path, scheduler="eevdf", seed=2)
    assert r["label"] == "modelled" and r["duration_s"] > 0
    assert set(r["tasks"]) == {"nice0-0", "nice5-1"}
    # The nice-0 hog gets the larger share of the CPU it shares with the nice-5 one.
    assert r["tasks"]["nice0-0"]["cpu_ms"] > r["tasks"]["nice5-1"]["cpu_ms"]
    with pytest.raises(SpecError, match="unknown platform"):
        lull.sim.rtapp(path, platform="vax")
    with pytest.raises(SpecError):
        lull.sim.rtapp({"tasks": "nope"})
