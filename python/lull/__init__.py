"""Lull from Python.

- ``lull.sim.run(spec)`` / ``lull.sim.rtapp(workload)``: the simulator (modelled figures).
- ``lull.audit.read(path)``: a scheduler audit log as a pandas DataFrame.
- ``lull.results.load(dir)``: the results files ``lull reproduce --out DIR`` writes.
- ``lull.sweep(grid, engine=...)``: a grid of spec overrides x seeds, run locally or on Dask.

Errors are the classes in ``lull.errors``.
"""

from . import audit, errors, results, sim
from ._sweep import sweep

__all__ = ["audit", "errors", "results", "sim", "sweep"]
