"""The throughput panel's capacity: the link that binds all jobs' storage traffic, not the sum of links."""

import hashlib
from pathlib import Path

import pytest

from batio.engines.embedded.routes import capacity
from batio.report.schedule_data import binding_capacity

PLATFORMS = Path(__file__).parents[1] / "platforms"
GiB = 2 ** 30


def _record(platform, **extra):
    path = str(PLATFORMS / f"{platform}.xml")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return {"spec": {"platform": path}, "inputs_sha256": {path: digest}, **extra}


@pytest.mark.parametrize(("platform", "gibps"), [("stria15_lustre_congested", 2.6), ("stria15_lustre", 15.0),
                                                  ("cluster16_pfs", 1e9 / GiB)])
def test_the_capacity_is_the_narrowest_link_every_route_to_storage_shares(platform, gibps):
    found = capacity(PLATFORMS / f"{platform}.xml")
    assert found["read"] == found["write"] == pytest.approx(gibps * GiB)


def test_the_panel_draws_the_binding_capacity_not_the_sum_of_the_storage_links():
    # What out_run.json records on Stria: each of the 4 OSS's narrowest shared link (the 2.6 GiB/s one).
    record = _record("stria15_lustre_congested", storage_bandwidth={f"oss{k}": 2.6 * GiB for k in range(4)})
    assert binding_capacity(record) == (pytest.approx(2.6 * GiB), None)
    gone = dict(record, spec={"platform": "/nowhere.xml"})  # no platform file: the record's sum, said so
    assert binding_capacity(gone) == (pytest.approx(4 * 2.6 * GiB), "capacity: the sum of the storage hosts' links")
