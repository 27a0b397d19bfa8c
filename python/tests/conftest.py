import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def root():
    """The repository root (specs and platforms are read from it)."""
    return ROOT


#: A short framework-model spec (runs in milliseconds): 300 ms of the stylus spiral on the modelled Jetson TK1.
TINY = {
    "kind": "framework",
    "experiment": "tiny",
    "description": "the stylus spiral scaled to 300 ms",
    "platform": "jetson-tk1",
    "seed": 1,
    "models": ["pull-16ms", "esm"],
    "tail_ms": 50,
    "cpu": {"main_cores": 2, "companion": False},
    "app": {"handler_cycles": 150000, "draw_cycles": 400000, "cache_kib": 256},
    "workload": {"kind": "trace", "trace": "stylus-spiral", "scale_to_ms": 300},
}


@pytest.fixture
def tiny():
    import copy

    return copy.deepcopy(TINY)
