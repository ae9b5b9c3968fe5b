"""scripts/locality_ablation.py's tables from hand-made job tables: each
variant's mean stretch over the evaluated jobs and its improvement over
FCFS within the same model, whole and split by submission time."""

from pathlib import Path

from conftest import script
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
locality_ablation = script("locality_ablation")


def table(rows):
    """Jobs as (category, subtime, stretch); category 1 is evaluated. The
    other measures of ``metrics.summary`` are zero."""
    jobs = pd.DataFrame(rows, columns=["category", "subtime", "stretch"])
    return jobs.assign(load_wait=0.0, reused=False, queue_time=0.0, flow=0.0)


@pytest.fixture
def runs():
    # Evaluated window from 1,000 s; the first hour ends at 4,600 s. A
    # category -2 job (running at the cut) and a category 2 job (after the
    # day) are not evaluated, whatever their stretch.
    fcfs = table([(1, 1000, 6.0), (1, 4000, 4.0), (1, 5000, 2.0), (1, 9000, 2.0), (-2, 0, 50.0), (2, 90000, 9.0)])
    lea = table([(1, 1000, 1.0), (1, 4000, 1.0), (1, 5000, 3.0), (1, 9000, 3.0), (-2, 0, 1.0), (2, 90000, 1.0)])
    return {"fcfs.batio": (fcfs, 1.0), "lea.batio": (lea, 1.0)}


def cell(result, variant, model):
    row = result[(result["variant"] == variant) & (result["model"] == model)].iloc[0]
    return row["mean_stretch"], row["improvement"]


def test_whole_window(runs):
    result = locality_ablation.ablation(runs, "no_such_slice")
    assert cell(result, "fcfs", "batio") == (3.5, 1.0)
    assert cell(result, "lea", "batio") == (2.0, 1.75)   # 3.5 / 2.0
    assert set(result["model"]) == {"batio"}   # no recorded authors' run by that name: no column of theirs


def test_split_by_submission_time(runs):
    result = locality_ablation.split_ablation(runs, 1)
    assert cell(result, "fcfs", "batio, first 1 h") == (5.0, 1.0)
    assert cell(result, "lea", "batio, first 1 h") == (1.0, 5.0)
    assert cell(result, "fcfs", "batio, after 1 h") == (2.0, 1.0)
    mean, improvement = cell(result, "lea", "batio, after 1 h")
    assert mean == 3.0 and improvement == pytest.approx(2 / 3)
