"""batio calibrate: a measured curve in, the property and the engine's curve out."""

from pathlib import Path
import xml.etree.ElementTree as ET

from conftest import found
import pandas as pd
import pytest

from batio.cli import main
from batio.errors import InputError
from batio.twin.calibrate import insert_property, read_measurement

MEASURED = "clients,aggregate GB/s\n1,1.0\n2,1.8\n4,3.2\n4,2.8\n4,3.0\n8,2.4\n"


def test_repetitions_reduce_to_their_median(tmp_path):
    path = tmp_path / "ior.csv"
    path.write_text(MEASURED)
    assert read_measurement(path) == [(1, 1e9), (2, 1.8e9), (4, 3e9), (8, 2.4e9)]
    assert read_measurement(path, "MiB/s")[0] == (1, 2 ** 20)


@pytest.mark.parametrize("text, problem", [("clients,x\n1,1\n2,-1\n", "line 3: the aggregate throughput must be from"),
                                           ("1,1\n2.5,2\n", "line 2: clients must be a whole number"),
                                           ("1,1\n2,fast\n", "line 2: expected 'clients,throughput'"),
                                           ("clients,x\n", "no measurement rows"),
                                           ("1,1\n1000000000,2\n", "line 2: clients must be a whole number from 1 "
                                                                    "to 4096"),
                                           ("1,1\n2,1e300\n", "line 2: the aggregate throughput must be from 1000 "
                                                               "to 1e\\+15 B/s"),
                                           ("1,1\n2,1e400\n", "line 2: the aggregate throughput must be from"),
                                           ("1,1\n2,nan\n", "line 2: expected 'clients,throughput'"),
                                           ("1,1\n2,\u0661\n", "line 2: expected 'clients,throughput'"),
                                           ("".join(f"{k},1\n" for k in range(1, 300)),
                                            "the measured client counts add up to 44850")])
def test_bad_measurements_are_one_line_errors(tmp_path, text, problem):
    path = tmp_path / "ior.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=problem):
        read_measurement(path)


@pytest.mark.parametrize("declared, warning", [
    ("2.5GBps", "the curve reaches 3 GB/s at 4 clients, above what 'disk' declares 2.5 GB/s"),
    ("31e9", "'disk' declares 31 GB/s, over 10 times the curve's peak (3 GB/s at 4 clients)"),
    ("3GBps", None), ("20GBps", None)])
def test_a_curve_that_contradicts_the_declared_bandwidth_is_named(tmp_path, declared, warning):
    from batio.twin.calibrate import contradiction
    path = tmp_path / "ior.csv"
    path.write_text(MEASURED)  # peak: the median 3.0 GB/s at 4 clients
    text = f'<platform>\n  <link id="disk" bandwidth="{declared}" latency="0"/>\n</platform>'
    problem = contradiction(text, "disk", read_measurement(path), "p.xml")
    assert problem == warning or problem.startswith(warning)


def test_the_property_goes_on_the_named_element(tmp_path):
    text = '<platform>\n  <link id="disk" bandwidth="1GBps"/>\n  <link id="other" bandwidth="1GBps"/>\n</platform>'
    result = ET.fromstring(insert_property(text, "disk", "batio:contention", "1:1GBps", "p.xml"))
    disk = found(result.find("link[@id='disk']"))
    assert [(p.get("id"), p.get("value")) for p in disk] == [("batio:contention", "1:1GBps")]
    assert list(found(result.find("link[@id='other']"))) == []
    with pytest.raises(InputError, match="no <link>, <host> or <cluster> with id 'nope'"):
        insert_property(text, "nope", "batio:contention", "1:1GBps", "p.xml")


def test_calibrate_writes_the_property_and_the_simulated_curve(tmp_path, capsys):
    """The engine's k concurrent writers give the measured medians within 1 %."""
    path = tmp_path / "ior.csv"
    path.write_text(MEASURED)
    out = tmp_path / "cal"
    assert main(["calibrate", str(path), "--out", str(out), "--platform", "cluster16_pfs", "--element", "storage"]) == 0
    assert (out / "property.xml").read_text() == \
        '<prop id="batio:contention" value="1:1GBps 2:1.8GBps 4:3GBps 8:2.4GBps"/>\n'
    table = pd.read_csv(out / "calibration.csv")
    assert list(table["clients"]) == [1, 2, 4, 8]
    assert list(table["simulated_GBps"]) == pytest.approx([1.0, 1.8, 3.0, 2.4], rel=0.01)
    assert (out / "calibration.png").stat().st_size > 0
    calibrated = ET.parse(out / "cluster16_pfs_calibrated.xml").getroot()
    props = {p.get("id"): p.get("value") for p in found(calibrated.find(".//cluster[@id='storage']"))}
    assert props["batio:contention"] == "1:1GBps 2:1.8GBps 4:3GBps 8:2.4GBps"
    assert "property: <prop" in capsys.readouterr().out


@pytest.mark.parametrize("element, role", [("h0", "''"), ("master_host", "''")])
def test_a_curve_on_a_host_that_is_not_storage_is_refused(tmp_path, capsys, element, role):
    """`batio run` refuses such a platform, so calibrate must not write it."""
    path = tmp_path / "measured.csv"
    path.write_text(MEASURED)
    platform = Path(__file__).parent / "data" / "tiny.xml"
    assert main(["calibrate", str(path), "--out", str(tmp_path / "out"), "--platform", str(platform),
                 "--element", element]) == 2
    assert capsys.readouterr().err == (f"batio: error: --element: host '{element}' of {platform} is not a storage "
                                       f"host (role {role}): a contention curve goes on a storage host, its "
                                       "<cluster> or a <link>\n")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
