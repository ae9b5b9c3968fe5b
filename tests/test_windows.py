"""Windows of a trace as replicas (batio.windows): which jobs each window holds, in which category."""

import json

import pytest

from batio.errors import InputError
from batio.windows import trace_window, window_count


def test_a_window_holds_its_margins_recategorised_and_shifted(tmp_path):
    trace = tmp_path / "t.json"
    profiles = {"d": {"type": "delay", "delay": 5}, "unused": {"type": "delay", "delay": 9}}
    jobs = [{"id": i, "subtime": t, "walltime": 10, "res": 1, "profile": "d"} for i, t in
            enumerate([0, 60, 120, 250, 310])]
    trace.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    assert window_count(trace, 100) == 3  # the span 0..310 holds 3 whole windows
    # Window 2 is [100, 200); with 50 s of warm-up and 20 s of cool-down it holds [50, 220), from time 50 on.
    second = trace_window(2, str(trace), 100, warmup=50, cooldown=20)
    assert [(j["id"], j["subtime"], j["category"]) for j in second["jobs"]] == [(1, 10, 0), (2, 70, 1)]
    assert list(second["profiles"]) == ["d"] and second["window"]["trace_seconds"] == [100, 200]
    third = trace_window(3, str(trace), 100, warmup=50, cooldown=20)
    assert [(j["id"], j["subtime"], j["category"]) for j in third["jobs"]] == [(3, 100, 1), (4, 160, 2)]
    with pytest.raises(InputError, match="shorter than one window"):
        window_count(trace, 400)
    with pytest.raises(InputError, match="--window-count: expected 1 to 3"):
        window_count(trace, 100, count=4)


def test_windows_tile_the_evaluated_category_only(tmp_path):
    # An imported trace with warm-up (category 0) and cool-down (2): windows start at the first category-1 job.
    trace = tmp_path / "t.json"
    jobs = [{"id": i, "subtime": t, "walltime": 10, "res": 1, "profile": "d", "category": c} for i, (t, c) in
            enumerate([(0, 0), (100, 1), (150, 1), (300, 1), (900, 2)])]
    trace.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 5}}}))
    assert window_count(trace, 100) == 2
    first = trace_window(1, str(trace), 100)
    assert [(j["id"], j["subtime"], j["category"]) for j in first["jobs"]] == [(1, 0, 1), (2, 50, 1)]
