import json

import pytest

import lull
from lull.errors import ResultsError


def result_file(section, index, data=None, error=None, version=1):
    f = {
        "format": "lull-results",
        "version": version,
        "section": section,
        "index": index,
        "title": section.title(),
        "label": "modelled",
        "machine": {"hostname": "h", "arch": "x86_64", "cpus": 2, "cpu_model": "c",
                    "memory_mib": 1024},
        "kernel": "6.18",
        "commit": "abc",
        "date": "2026-01-01T00:00:00Z",
        "elapsed_s": 1.5,
    }
    if error is None:
        f["data"] = data
    else:
        f["error"] = error
    return f


def write(tmp_path, *files):
    d = tmp_path / "results"
    d.mkdir(exist_ok=True)
    for f in files:
        (d / f"{f['section']}.json").write_text(json.dumps(f))
    return tmp_path


def test_one_row_per_leaf_in_reproduce_order(tmp_path):
    out = write(
        tmp_path,
        result_file("policies", 2, {"tracking-10s": {"power_mw": 1600.5, "note": "x"}}),
        result_file("marz", 1, {"m": [1, True]}),
        result_file("live", 3, error="needs root"),
    )
    df = lull.results.load(out)
    assert df["section"].tolist() == ["marz", "marz", "policies", "policies", "live"]
    assert df["path"].tolist() == ["/m/0", "/m/1", "/tracking-10s/note",
                                   "/tracking-10s/power_mw", ""]
    assert df["value"].tolist()[:2] == [1.0, 1.0]
    assert df.loc[df["path"] == "/tracking-10s/power_mw", "value"].item() == 1600.5
    assert df.loc[df["section"] == "live", "error"].item() == "needs root"
    assert set(df["commit"]) == {"abc"} and set(df["kernel"]) == {"6.18"}


def test_a_file_of_another_version_is_refused(tmp_path):
    out = write(tmp_path, result_file("marz", 1, {"a": 1}, version=99))
    with pytest.raises(ResultsError, match="version 99"):
        lull.results.load(out)


def test_missing_and_empty_directories_are_refused(tmp_path):
    with pytest.raises(ResultsError, match="no such directory"):
        lull.results.load(tmp_path / "none")
    with pytest.raises(ResultsError, match="no results files"):
        lull.results.load(tmp_path)


def test_a_stray_file_is_refused(tmp_path):
    write(tmp_path, result_file("marz", 1, {"a": 1}))
    (tmp_path / "results" / "notes.json").write_text('{"hello": 1}')
    with pytest.raises(ResultsError, match="not a Lull results file"):
        lull.results.load(tmp_path)
