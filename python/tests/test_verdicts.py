"""The seed-verdict sweeps: the rule, the evidence of a short sweep, Dask against local."""

import json

import pytest

import lull
from lull import verdicts


def _claim(seed, tol, signed):
    return verdicts.Claim("c", "t", seed, "s", "%", tol, signed, "marz_power_change")


def test_the_rule_needs_the_tolerance_and_for_a_change_the_sign():
    c = _claim(-12.6, 5.0, True)
    assert verdicts.holds(c, -10.0) and verdicts.holds(c, -17.6)
    assert not verdicts.holds(c, -17.7)
    small = _claim(-2.0, 5.0, True)
    assert not verdicts.holds(small, 1.0)  # as close, but the other direction
    assert verdicts.holds(_claim(94.3, 14.1, False), 90.0)
    assert not verdicts.holds(_claim(94.3, 14.1, False), float("nan"))


def test_seed_000s_squared_current_from_its_own_numbers():
    m = verdicts.squared_current_correction(184.7, 22.9)
    # 184.7 mW is 22.9 % of 806.6 mW; a ratio of I^2 of 0.771 is a current (power) ratio 0.878.
    assert m["implied_pull_mw"] == pytest.approx(806.55, abs=0.1)
    assert m["power_change_pct"] == pytest.approx(-12.19, abs=0.01)
    # 0.8066 W = I^2 x 0.005 ohm: 12.7 A, 152 W at 12 V.
    assert m["implied_current_a"] == pytest.approx(12.70, abs=0.01)


def _toggling_evidence(root, engine, **kw):
    return verdicts.run(engine=engine, quick=True, root=root, studies=["toggling"], **kw)


def test_a_short_sweep_gives_evidence_that_agrees_with_a_direct_run(root):
    ev = _toggling_evidence(root, "local", workers=1)
    e = ev["claims"]["toggling_best_period"]
    # Three axes cut to at most three values each.
    assert ev["runs"] == e["points"] == 3 * 3 * 3
    direct = lull.sim.run(f"{root}/experiments/toggling/blackscholes.toml")
    assert e["ours_at_defaults"] == verdicts.best_toggle_period_s(direct)
    assert e["reproduced_at_defaults"] == verdicts.holds(
        verdicts.STUDIES[-1].claims[0], e["ours_at_defaults"]
    )
    # Every axis has its one-at-a-time figures, most sensitive first, and the cause names it.
    spans = [s["span"] for s in e["sensitivity"]]
    assert spans == sorted(spans, reverse=True) and len(spans) == 3
    assert e["sensitivity"][0]["label"] in e["cause"]
    json.dumps(ev)  # the evidence file is JSON


def test_dask_and_local_give_the_same_evidence(root):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        on_dask = _toggling_evidence(root, "dask", address=cluster.scheduler_address)
    local = _toggling_evidence(root, "local")
    assert on_dask["claims"] == local["claims"]


def test_every_point_is_checked_before_anything_runs(root, monkeypatch):
    bad = verdicts.Axis("painting.hogs", "hogs", (2, 65), 2, (2, 2), "s")
    study = verdicts.Study(
        "bad", "experiments/vtcfs/painting.toml", {}, (bad,), verdicts.STUDIES[3].claims
    )
    monkeypatch.setattr(verdicts, "STUDIES", (study,))
    with pytest.raises(lull.errors.SweepError, match="painting.hogs"):
        verdicts.run(engine="local", root=root)
