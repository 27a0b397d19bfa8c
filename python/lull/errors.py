"""The errors Lull raises. Every one is a ``LullError``; the message names the input and the
problem (the same text the ``lull`` command prints)."""


class LullError(Exception):
    """Base of every error Lull raises for bad input."""


class InputError(LullError, OSError):
    """An input file that cannot be read: missing, unreadable, not a regular file (a directory,
    a FIFO, a device such as ``/dev/zero``), larger than its kind's bound, or not UTF-8 text.
    Also an ``OSError``, so code that caught ``OSError`` before still does."""


class SpecError(LullError, ValueError):
    """A spec (file or dict) or an rt-app workload the simulator refuses."""


class LogError(LullError, ValueError):
    """An audit log that is not sound: bad magic or version, truncated, checksum mismatch, an
    entry out of range or out of order."""


#: The name the issue uses for a corrupt log.
CorruptLog = LogError


class ResultsError(LullError, ValueError):
    """A results directory that cannot be read: missing, empty, or holding a file that is not a
    results file of this version."""


class SweepError(LullError, ValueError):
    """A sweep grid or sweep file that cannot run: an unknown override key, an empty axis, a bad
    engine or output."""


class SweepWarning(UserWarning):
    """A sweep whose axis (an override, or the seeds) changed no figure anywhere: its runs were
    spent on copies of one result."""
