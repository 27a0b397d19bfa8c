"""The simulator of a modelled SoC. Every figure it returns is modelled, not measured."""

import json
import os

from . import _inputs, _lull
from .errors import SpecError


def run(spec, *, seed=None, models=None):
    """Runs every model of a spec of any kind (its ``kind``: framework, ucsg, painting,
    interbench, hackbench, toggling).

    ``spec`` is a path to a spec file (``experiments/marz/tracking-10s.toml``) or a dict of the
    same tables. ``seed`` overrides the spec's seed; ``models`` (a list of names) runs only
    those. Returns the dict ``lull sim run --json`` prints, with ``"kind"`` (the spec's) and
    ``"label": "modelled"``. Raises ``SpecError`` for a spec the simulator refuses, naming the
    file, line and column where it knows them.
    """
    text, origin = _inputs.spec_text(spec)
    seed = _inputs.seed(seed)
    models = _model_names(models)
    result = json.loads(_lull.run_spec(text, origin, seed, models))
    result["label"] = "modelled"
    return result


def rtapp(workload, *, platform="x86-64", scheduler=None, policy=None, seed=1, loop_ns=None):
    """Runs an rt-app workload (a JSON file's path, or its dict) on a modelled platform.

    ``scheduler`` (``cfs``, ``eevdf``, ...) and ``policy`` (a dict of ``[policy]`` slots, e.g.
    ``{"governor": "schedutil"}``) choose the kernel's policies; ``loop_ns`` is rt-app's busy-loop
    calibration on the modelled machine. Returns ``{"duration_s", "platform", "label", "tasks":
    {thread: {"cpu_ms", "periods", "wakeup_latency_us", "slack_us"}}}``, as
    ``lull sim rtapp --json``.
    """
    if isinstance(workload, dict):
        try:
            text = json.dumps(workload, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise SpecError(f"rt-app dict: {e}") from None
        origin = "rt-app dict"
    elif isinstance(workload, (str, os.PathLike)):
        origin = os.fspath(workload)
        text = _inputs.read_text(origin, "rtapp")
    else:
        raise SpecError(f"an rt-app workload is a path or a dict, not {type(workload).__name__}")
    if not isinstance(platform, str):
        raise SpecError(f"platform must be a name, not {platform!r}")
    slots = []
    if scheduler is not None:
        slots.append(("scheduler", scheduler))
    for slot, name in (policy or {}).items():
        slots.append((str(slot), str(name)))
    if loop_ns is not None and (isinstance(loop_ns, bool) or not isinstance(loop_ns, (int, float))):
        raise SpecError(f"loop_ns must be a number of ns, not {loop_ns!r}")
    seed = _inputs.seed(seed)
    if seed is None:
        raise SpecError("seed must be an int in 0..2**64-1, not None")
    out = _lull.run_rtapp(text, origin, platform, slots, seed,
                          None if loop_ns is None else float(loop_ns))
    return json.loads(out)


def audit_logs(spec, directory, *, seed=None, models=None):
    """Runs each model of a spec whose kind records scheduling events (framework, ucsg,
    toggling) with the scheduler audit on and writes its log
    (the ``lull audit`` format, modelled) to ``DIR/<experiment>-<model>.audit``, as
    ``lull sim run --audit-dir DIR``. Returns ``{model: (path, records)}``; read a log back with
    ``lull.audit.read``."""
    text, origin = _inputs.spec_text(spec)
    seed = _inputs.seed(seed)
    models = _model_names(models)
    written = _lull.write_audit_logs(text, origin, os.fspath(directory), seed, models)
    return {model: (str(path), n) for model, path, n in written}


def _model_names(models):
    """``models`` as a list of names (``None``: every model); anything else is a ``SpecError``."""
    if models is None:
        return None
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise SpecError(f"models must be a list of model names, not {models!r}")
    return list(models)
