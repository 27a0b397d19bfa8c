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
        """experiment = "tiny"
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


def test_other_spec_kinds_are_named(root):
    with pytest.raises(SpecError, match="toggling spec runs with `lull sim run`"):
        lull.sim.run(os.path.join(root, "experiments/toggling/vips.toml"))


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
