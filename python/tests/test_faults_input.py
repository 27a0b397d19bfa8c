"""Hostile input files: every failure to read one is a ``lull.errors`` error naming the path,
never a bare ``FileNotFoundError``, ``OSError`` or ``UnicodeDecodeError``, and nothing unbounded
(a device, a FIFO) is read. Each case bounds itself with a ``faulthandler`` guard."""

import faulthandler
import os

import pytest

import lull
from lull.errors import InputError, LogError, LullError, SpecError, SweepError
from lull.sweep import load_file

#: Hang guard per case: every read here is refused before it starts.
GUARD_S = 60


@pytest.fixture(autouse=True)
def hang_guard():
    faulthandler.dump_traceback_later(GUARD_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def test_input_error_is_a_lull_error_and_an_os_error():
    assert issubclass(InputError, LullError) and issubclass(InputError, OSError)


@pytest.mark.parametrize("read", [lull.sim.run, lull.sim.rtapp, lull.audit.read])
def test_a_missing_file_names_its_path(read):
    with pytest.raises(InputError, match="/nonexistent/lull-input: cannot open"):
        read("/nonexistent/lull-input")


@pytest.mark.parametrize(
    "path, found",
    [("/dev/zero", "a character device"), ("/dev/null", "a character device"), ("/tmp", "a directory")],
)
@pytest.mark.parametrize("read", [lull.sim.run, lull.sim.rtapp, lull.audit.read])
def test_devices_and_directories_are_refused(read, path, found):
    with pytest.raises(InputError, match=f"{path}: is {found}, not a regular file"):
        read(path)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        lull.sim.run(fifo)


def test_a_spec_that_is_not_utf8_is_an_input_error(tmp_path):
    p = tmp_path / "latin1.toml"
    p.write_bytes(b'experiment = "caf\xe9"\n')
    with pytest.raises(InputError, match="not UTF-8 text \\(invalid byte at offset 17\\)"):
        lull.sim.run(p)


def test_a_spec_past_its_bound_is_refused(tmp_path):
    p = tmp_path / "huge.toml"
    with open(p, "wb") as f:
        f.truncate(2 << 20)  # sparse: 2 MiB of zeros, twice a spec's bound
    with pytest.raises(InputError, match="more than the 1048576 bytes a spec may hold"):
        lull.sim.run(p)


def test_a_sweep_file_on_a_device_is_a_sweep_error():
    with pytest.raises(SweepError, match="sweep file /dev/zero: is a character device"):
        load_file("/dev/zero")


def test_an_absurd_spec_value_is_a_spec_error(tiny):
    tiny["app"]["handler_cycles"] = 2**64 - 1
    with pytest.raises(SpecError, match="app.handler_cycles"):
        lull.sim.run(tiny)
    tiny["app"]["handler_cycles"] = 150000
    tiny["app"]["cache_kib"] = 10**6
    with pytest.raises(SpecError, match="app.cache_kib"):
        lull.sim.run(tiny)


def test_a_log_of_garbage_is_a_log_error(tmp_path):
    p = tmp_path / "garbage.audit"
    p.write_bytes(b"\xff" * 100)
    with pytest.raises(LogError):
        lull.audit.read(p)


@pytest.mark.parametrize("make, found", [
    (lambda p: os.mkfifo(p), "a FIFO"),
    (lambda p: os.symlink("/dev/zero", p), "a character device"),
    (lambda p: os.mkdir(p), "a directory"),
])
def test_results_files_that_are_not_regular_files_are_refused(tmp_path, make, found):
    from lull.errors import ResultsError
    (tmp_path / "results").mkdir()
    x = tmp_path / "results" / "x.json"
    make(x)
    with pytest.raises(ResultsError, match=f"results file {x}: is {found}, not a regular file"):
        lull.results.load(tmp_path)
