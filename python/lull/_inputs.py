"""Checks of Python arguments shared by the modules (one home for each)."""

import json
import os

from .errors import SpecError

_U64_MAX = 2**64 - 1


def seed(value, what="seed"):
    """A seed: an int in 0..2**64-1, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _U64_MAX:
        raise SpecError(f"{what} must be an int in 0..2**64-1, not {value!r}")
    return value


def read_text(path, kind):
    """The text of an input file through the native bounded reader: ``InputError`` naming the
    path for a missing or unreadable file, a directory, FIFO or device, a file past the kind's
    bound, or text that is not UTF-8. ``kind`` is ``spec``, ``rtapp``, ``trace`` or ``sweep``."""
    from . import _lull

    return _lull.read_text(os.fspath(path), kind)


def spec_text(spec):
    """The TOML text of a spec given as a path or a dict, and a name for it in messages.

    A dict goes through the same reader as a file: it is written out as TOML by the native module
    and parsed from that text."""
    from . import _lull

    if isinstance(spec, dict):
        try:
            as_json = json.dumps(spec, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise SpecError(f"spec dict: {e}") from None
        return _lull.spec_json_to_toml(as_json, "spec dict"), "spec dict"
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        return read_text(path, "spec"), path
    raise SpecError(f"a spec is a path or a dict, not {type(spec).__name__}")
