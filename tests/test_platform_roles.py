"""Host roles are resolved as Batsim 4.2.1 resolves them (batsim.cpp gives
the --master-host "master", a --role replaces that, and machines.cpp
appends a command-line role to the host's own with a comma), and what
Batsim rejects, such as 'master,master', is rejected here too with the file
and host named, instead of being merged silently."""

import pytest

from batio.catalog import bundled_platforms
from batio.errors import InputError
from batio.inputs.platform import classify, read_properties


def platform(tmp_path, roles):
    """A platform whose hosts are the keys of ``roles``, each with its role property (None: none)."""
    hosts = "".join(f"<host id='{name}' speed='1Gf'/>" if role is None else
                    f"<host id='{name}' speed='1Gf'><prop id='role' value='{role}'/></host>"
                    for name, role in roles.items())
    path = tmp_path / "p.xml"
    path.write_text(f"<platform version='4.1'><zone id='z' routing='Full'>{hosts}</zone></platform>")
    return path, list(roles)


def test_default_master_host_and_storage_property(tmp_path):
    path, hosts = platform(tmp_path, {"master_host": None, "n0": None, "n1": None, "pfs": "storage"})
    result = classify(path, hosts)
    assert result.master == "master_host"
    assert [(r.id, r.name) for r in result.resources] == [(0, "n0"), (1, "n1"), (2, "pfs")]


def test_role_property_on_the_default_master_host_is_rejected_as_batsim_does(tmp_path):
    path, hosts = platform(tmp_path, {"master_host": "master", "n0": None})
    with pytest.raises(InputError) as error:
        classify(path, hosts)
    message = str(error.value)
    assert "p.xml" in message and "host 'master_host'" in message and "'master,master'" in message


def test_master_property_elsewhere_is_fine_when_no_host_is_named_master_host(tmp_path):
    path, hosts = platform(tmp_path, {"ctl": "master", "n0": None})
    assert classify(path, hosts).master == "ctl"


def test_command_line_role_is_appended_to_the_property(tmp_path):
    path, hosts = platform(tmp_path, {"master_host": None, "n0": None, "pfs": "storage"})
    with pytest.raises(InputError, match="host 'pfs'.*'storage,storage'"):
        classify(path, hosts, role_overrides={"pfs": "storage"})
    path, hosts = platform(tmp_path, {"master_host": None, "n0": None, "pfs": None})
    assert [r.name for r in classify(path, hosts, role_overrides={"pfs": "storage"}).storage] == ["pfs"]


def test_a_role_option_on_the_master_host_replaces_master(tmp_path):
    # Batsim's -r master_host:storage overwrites -m's "master": no master is left.
    path, hosts = platform(tmp_path, {"master_host": None, "n0": None})
    with pytest.raises(InputError, match="exactly one master host"):
        classify(path, hosts, role_overrides={"master_host": "storage"})


def test_two_masters_and_unknown_roles(tmp_path):
    path, hosts = platform(tmp_path, {"a": "master", "b": "master", "n0": None})
    with pytest.raises(InputError, match="exactly one master host"):
        classify(path, hosts)
    path, hosts = platform(tmp_path, {"master_host": None, "n0": "gpu"})
    with pytest.raises(InputError, match="host 'n0' has role 'gpu'"):
        classify(path, hosts)


@pytest.mark.parametrize("name", sorted(bundled_platforms()))
def test_every_bundled_platform_has_one_batsim_compatible_master(name):
    path = bundled_platforms()[name]
    properties, _ = read_properties(path)
    result = classify(path, list(properties))
    assert result.compute and result.master
