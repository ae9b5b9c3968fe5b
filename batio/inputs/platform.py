"""Which hosts of a SimGrid platform are compute, storage and master resources.

Batsim reads roles from the hosts' ``role`` property; SimGrid 3.32's Python
API exposes no host properties, so the roles are read from the XML itself
(``<prop id="role">`` on a ``<host>`` or on a ``<cluster>``, which gives it
to all the cluster's hosts), then completed like Batsim's ``-r``/``-m``.

Resource ids are numbered as Batsim 4.2 numbers them (``Machines::
create_machines``): compute hosts first, then storage hosts, each in the
order of SimGrid's host list, which is by ascending name as strings
("a0", "a1", "a10", ...). Batsim's own numeric sort works on a copy of the
list and so has no effect on the ids.
"""

from dataclasses import dataclass, field
import functools
from pathlib import Path
import xml.etree.ElementTree as ET

from batio.errors import InputError, listed, quoted

DEFAULT_MASTER_HOST = "master_host"
KNOWN_ROLES = ("", "master", "storage", "compute_node")
MAX_CLUSTER_HOSTS = 1 << 20


@dataclass(frozen=True)
class Resource:
    id: int
    name: str
    role: str  # "" for compute hosts, "storage" for storage hosts


@dataclass
class Platform:
    path: Path
    compute: list[Resource]
    storage: list[Resource]
    master: str
    properties: dict[str, dict[str, str]] = field(default_factory=dict)
    zone_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    full_zones: dict[str, str] = field(default_factory=dict)  # host -> its zone, for routing Full zones of 2+ hosts
    routes: set = field(default_factory=set)  # (src, dst) host pairs those zones declare a route for

    def missing_route(self, source, destination):
        """The Full zone holding both hosts but no route between them, or None."""
        zone = self.full_zones.get(source)
        if zone is None or zone != self.full_zones.get(destination) or (source, destination) in self.routes:
            return None
        return zone

    @property
    def resources(self) -> list[Resource]:
        return self.compute + self.storage


def _radical_numbers(radical: str, source, element_id):
    numbers = []
    for part in radical.split(","):
        bounds = part.strip().split("-")
        try:
            if len(bounds) == 1:
                numbers.append(int(bounds[0]))
            elif len(bounds) == 2:
                numbers.extend(range(int(bounds[0]), int(bounds[1]) + 1)[:MAX_CLUSTER_HOSTS + 1])
            else:
                raise ValueError(part)
        except ValueError:
            raise InputError(source, f"cluster '{element_id}' has an unreadable radical "
                                     f"'{radical}' (expected e.g. '0-511' or '0-3,8')",
                             field="radical") from None
        if len(numbers) > MAX_CLUSTER_HOSTS:  # SimGrid would build them all, for hours
            raise InputError(source, f"cluster '{element_id}': radical '{radical}' makes more than "
                                     f"{MAX_CLUSTER_HOSTS} hosts", field="radical")
    return numbers


def _properties_of(element):
    return {prop.get("id"): prop.get("value", "") for prop in element.findall("prop")}


def platform_xml(path):
    """The root <platform> element of ``path``, parsed once however many readers ask for it
    (keyed on the file's bytes, so that a rewritten file is parsed again); readers only read it."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no such platform file") from None
    return _parsed(str(path), data)


@functools.lru_cache(maxsize=8)
def _parsed(path, data):
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        raise InputError(path, f"malformed XML: {error}") from None
    if root.tag != "platform":
        raise InputError(path, f"root element is <{root.tag}>, expected a SimGrid <platform>")
    return root


def read_full_zone_routes(path):
    """(host -> zone id, declared (src, dst) routes) for the hosts of
    ``routing="Full"`` zones, whose every pair of hosts needs a <route>."""
    zones, routes = {}, set()
    for zone in platform_xml(path).iter():
        hosts = zone.findall("host")
        if zone.tag not in ("zone", "AS") or zone.get("routing") != "Full" or len(hosts) < 2:
            continue
        for host in hosts:
            zones[host.get("id")] = zone.get("id")
        for route in zone.findall("route"):
            routes.add((route.get("src"), route.get("dst")))
            if route.get("symmetrical", "YES").upper() != "NO":
                routes.add((route.get("dst"), route.get("src")))
    return zones, routes


def read_properties(path):
    """(host name -> its <prop> values, host name -> its cluster's <prop> values).

    A cluster's props are both host and zone properties in SimGrid, and
    Batsim forwards the latter as ``zone_properties``.
    """
    root = platform_xml(path)
    properties, zone_properties = {}, {}
    for element in root.iter():
        if element.tag == "host":
            properties[element.get("id")] = _properties_of(element)
        elif element.tag in ("cluster", "cabinet"):
            shared = _properties_of(element)
            prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
            for number in _radical_numbers(element.get("radical", ""), path, element.get("id")):
                properties[f"{prefix}{number}{suffix}"] = dict(shared)
                zone_properties[f"{prefix}{number}{suffix}"] = shared
    return properties, zone_properties


def classify(path, host_names, role_overrides=None, master_host=DEFAULT_MASTER_HOST) -> Platform:
    """Number the hosts of a loaded platform as Batsim does.

    ``host_names`` is SimGrid's host list; ``role_overrides`` maps host names
    to roles as Batsim's ``-r host:role``; ``master_host`` is Batsim's ``-m``.
    """
    properties, zone_properties = read_properties(path)
    # Batsim 4.2.1 (batsim.cpp, machines.cpp): the master host gets "master"
    # and a -r entry replaces it; a role given on the command line is
    # appended to the host's own role property with a comma; the result must
    # be exactly one known role, or Batsim aborts before time 0.
    if master_host != DEFAULT_MASTER_HOST and master_host not in host_names:
        # The default may be absent (a host with role 'master' serves); a host named on purpose may not.
        raise InputError("--master-host", f"{quoted(master_host)} names no host of {path} (hosts: "
                                          f"{listed(host_names)})")
    command_line_roles = {master_host: "master"}
    for name, role in (role_overrides or {}).items():
        if name not in host_names:
            raise InputError(path, f"a role is given to host '{name}', which the platform does not have")
        command_line_roles[name] = role
    roles = {name: props.get("role", "") for name, props in properties.items()}
    for name, role in command_line_roles.items():
        if name not in host_names:
            continue
        own = properties.get(name, {}).get("role")
        roles[name] = role if own is None else f"{own},{role}"
        if roles[name] not in KNOWN_ROLES:
            how = ("the master host (--master-host, default master_host)" if role == "master"
                   else f"given role '{role}' by --role")
            raise InputError(path, f"host '{name}' has role '{own}' in the platform and is also {how}: Batsim 4.2.1 "
                                   f"aborts on the combined role '{roles[name]}' (remove the role property)",
                             field="role")

    compute, storage, masters = [], [], []
    for name in host_names:
        role = roles.get(name, "")
        if role not in KNOWN_ROLES:
            raise InputError(path, f"host '{name}' has role '{role}', which Batsim 4.2.1 rejects "
                                   "(exactly one of master, storage, compute_node, or none)", field="role")
        if role == "master":
            masters.append(name)
        elif role == "storage":
            storage.append(name)
        else:
            compute.append(name)
    if len(masters) != 1:
        raise InputError(path, f"expected exactly one master host (role 'master', or the host named "
                               f"by --master-host, default '{DEFAULT_MASTER_HOST}'); found "
                               f"{len(masters)}: {listed(masters) or 'none'}")
    if not compute:
        raise InputError(path, "the platform has no compute host")
    resources = [Resource(i, name, "") for i, name in enumerate(compute)]
    resources += [Resource(len(compute) + i, name, "storage") for i, name in enumerate(storage)]
    for name, role in roles.items():
        properties.setdefault(name, {})["role"] = role
    full_zones, routes = read_full_zone_routes(path)
    return Platform(Path(path), resources[:len(compute)], resources[len(compute):], masters[0], properties,
                    zone_properties, full_zones, routes)


def read_platform(spec) -> Platform:
    """The platform of a run spec as Batsim numbers it, read from its XML: how every
    part of batio outside the running embedded engine counts its compute hosts."""
    properties, _ = read_properties(spec.platform)
    return classify(spec.platform, list(properties), spec.roles, spec.master_host)
