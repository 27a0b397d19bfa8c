"""``python -m lull.sweep SWEEP.toml``; and ``lull.sweep(...)`` stays callable after
``import lull.sweep`` (this module calls through to ``lull._sweep.sweep``)."""

import sys
import types

from ._sweep import Grid, load_file, main, sweep


class _Callable(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable

__all__ = ["Grid", "load_file", "main", "sweep"]

if __name__ == "__main__":
    sys.exit(main())
