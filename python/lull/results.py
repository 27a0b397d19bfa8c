"""The results files ``lull reproduce --out DIR`` writes, as one long pandas table."""

import os

import pandas as pd

from . import _lull


def load(directory):
    """Loads every results file under ``DIR/results/``, in ``lull reproduce``'s order.

    One row per leaf figure of each experiment's JSON (long form, so experiments of any shape
    share one table; pivot what you need): ``section index title label`` (``measured``,
    ``modelled`` or ``measured and modelled``), ``path`` (``/``-separated keys into the
    experiment's JSON), ``value`` (numbers; booleans as 1/0), ``text`` (text leaves), ``error``
    (why an experiment could not run, on a single row with an empty path), and the provenance:
    ``hostname kernel commit date elapsed_s``. Raises ``ResultsError`` for a missing directory,
    a directory without results, a file that is not a results file of this version, or one that
    is not a regular file (a FIFO, a device, a directory) or is over 64 MiB, naming its path.
    """
    cols = _lull.load_results(os.fspath(directory))
    df = pd.DataFrame(cols)
    df["value"] = df["value"].astype("float64")
    for c in ["section", "label", "hostname", "kernel", "commit"]:
        df[c] = df[c].astype("category")
    return df
