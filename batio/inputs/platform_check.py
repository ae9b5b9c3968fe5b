"""What SimGrid 3.32 would accept wrongly, or abort on, in a platform file: checked first.

SimGrid reads numbers with C's strtod (hexadecimal, NaN, infinity), keeps
only the first speed of a pstate list at load time, truncates ``core="2.5"``,
and aborts the process (xbt_assert, or a segmentation fault for Dijkstra)
on ``core="0"``, a pstate list on a link, a duplicated route, a route in a
``routing="None"`` zone or an unknown routing. Each of these is refused here
with one line naming the file, the element and the attribute. The checks
follow SimGrid's own rules, so what Batsim 4.2.1 runs correctly passes; the
one stricter rule, no None zone of several hosts, spares an abort at the
first route batio asks for.
"""

import difflib
import logging

from batio.errors import InputError
from batio.inputs.contention import PROPERTIES as CONTENTION_PROPERTIES
from batio.inputs.contention import parse_curve
from batio.inputs.platform import platform_xml
from batio.quantities import BANDWIDTH_UNITS, MAX_LATENCY, SPEED_UNITS, TIME_UNITS, fails_with, quantity, whole

log = logging.getLogger(__name__)

VERSIONS = ("4", "4.0", "4.1")
ROUTINGS = ("Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster", "Wifi")
MAX_CORES = 1 << 20
PROPERTY_NAMES = ("role", *CONTENTION_PROPERTIES)
# element -> {attribute: kind}; "speed" may be a pstate list, "bandwidth" and "latency" may not.
NUMERIC = {
    "host": {"speed": "speed", "core": "core"},
    "cluster": {"speed": "speed", "core": "core", "bw": "bandwidth", "lat": "latency", "bb_bw": "bandwidth",
                "bb_lat": "latency", "loopback_bw": "bandwidth", "loopback_lat": "latency",
                "limiter_link": "bandwidth"},
    "cabinet": {"speed": "speed", "bw": "bandwidth", "lat": "latency"},
    "peer": {"speed": "speed", "bw_in": "bandwidth", "bw_out": "bandwidth", "lat": "latency"},
    "link": {"bandwidth": "bandwidth", "latency": "latency"},
    "backbone": {"bandwidth": "bandwidth", "latency": "latency"},
}


def _name(element):
    return f"<{element.tag} id='{element.get('id', '')}'>"


def _check_number(path, element, attribute, kind, text):
    fail = fails_with(path, f"{_name(element)}: ", field=attribute)
    if kind == "core":  # SimGrid truncates '2.5' and aborts on 0
        whole(text, fail, low=1, high=MAX_CORES, what="core")
        return
    if kind == "speed":
        for speed in text.split(","):  # a pstate list: every entry must be usable
            quantity(speed, SPEED_UNITS, fail, zero=element.tag == "host", what="speed")
        return
    if "," in text:
        fail(f"{kind} {text!r} is a list: only host speeds may list pstates (SimGrid aborts on it)")
    if kind == "bandwidth":
        quantity(text, BANDWIDTH_UNITS, fail, what="bandwidth")
    else:
        quantity(text, TIME_UNITS, fail, low=0.0, high=MAX_LATENCY, what="latency")


def _check_routes(path, zone):
    routing = zone.get("routing", "")
    routes = [child for child in zone if child.tag in ("route", "zoneRoute", "ASroute", "bypassRoute")]
    if routing not in ROUTINGS:
        raise InputError(path, f"{_name(zone)}: unknown routing {routing!r} (SimGrid 3.32 knows "
                               f"{', '.join(ROUTINGS)})", field="routing")
    if routing == "None" and routes:
        raise InputError(path, f"{_name(zone)}: a zone with routing 'None' cannot declare routes (SimGrid aborts); "
                               "use routing 'Full'", field="routing")
    hosts = zone.findall("host")
    if routing == "None" and len(hosts) > 1:  # batio asks for routes to storage hosts at time 0
        raise InputError(path, f"{_name(zone)}: its {len(hosts)} hosts have no route between them in a zone with "
                               "routing 'None' (SimGrid aborts on the first route asked); use routing 'Full' with "
                               "<route>s", field="routing")
    if routing in ("Dijkstra", "DijkstraCache"):
        _check_connected(path, zone, hosts, routes)
    declared = set()
    for route in routes:
        if route.tag == "bypassRoute":
            continue
        ends = (route.get("src"), route.get("dst"))
        pairs = [ends] + ([ends[::-1]] if route.get("symmetrical", "YES").upper() != "NO" else [])
        for pair in pairs:
            if pair in declared:
                raise InputError(path, f"{_name(zone)}: the route from '{pair[0]}' to '{pair[1]}' is declared twice "
                                       "(routes are symmetrical unless symmetrical=\"NO\"), which SimGrid aborts on",
                                 field="route")
            declared.add(pair)


def netpoints(root):
    """The names a <route> can name: hosts, routers and peers, and those a <cluster> makes
    (PREFIX N SUFFIX for N of its radical, and its router PREFIX ID_router SUFFIX); None when
    a cluster's radical cannot be read here (SimGrid then says what is wrong)."""
    names = {element.get("id") for element in root.iter() if element.tag in ("host", "router", "peer")}
    for cluster in root.iter("cluster"):
        prefix, suffix = cluster.get("prefix", ""), cluster.get("suffix", "")
        names.add(f"{prefix}{cluster.get('id', '')}_router{suffix}")
        for part in cluster.get("radical", "").split(","):
            ends = part.split("-")
            if not all(end.strip().isascii() and end.strip().isdigit() for end in ends) or len(ends) > 2:
                return None
            names.update(f"{prefix}{n}{suffix}" for n in range(int(ends[0]), int(ends[-1]) + 1))
    return names


def _check_route_ends(path, root):
    """A <route> names netpoints: SimGrid's refusal of another name spans several lines."""
    if root.find(".//cabinet") is not None:  # cabinets name their hosts their own way
        return
    names = netpoints(root)
    if names is None:
        return
    for zone in root.iter():
        for route in zone.findall("route"):
            for end in ("src", "dst"):
                if route.get(end) not in names:
                    raise InputError(path, f"{_name(zone)}: a route's {end} {route.get(end)!r} names no host, router "
                                           "or peer of the platform", field="route")


def _check_connected(path, zone, hosts, routes):
    """SimGrid's Dijkstra routing crashes (segmentation fault) on a transfer between
    two hosts that no chain of routes joins: every host of the zone must be joined."""
    parent: dict[str, str] = {}

    def root(node):
        while parent.get(node, node) != node:
            parent[node] = parent.get(parent[node], parent[node])  # path halving: later finds are short
            node = parent[node]
        return node
    for route in routes:
        source, destination = root(route.get("src")), root(route.get("dst"))
        if source != destination:
            parent[source] = destination
    names = [host.get("id") for host in hosts]
    apart = [name for name in names[1:] if root(name) != root(names[0])] if names else []
    if apart:
        raise InputError(path, f"{_name(zone)}: no chain of routes joins host '{names[0]}' to '{apart[0]}' (SimGrid's "
                               "Dijkstra routing crashes on a transfer between them); add a <route>", field="route")


def _check_properties(path, element):
    ids = [prop.get("id", "") for prop in element.findall("prop")]
    for prop in element.findall("prop"):
        name = prop.get("id", "")
        if name in PROPERTY_NAMES:
            if ids.count(name) > 1:
                raise InputError(path, f"{_name(element)}: property given twice (give it once)", field=name)
            if name in CONTENTION_PROPERTIES:  # here, before SimGrid loads the platform
                parse_curve(prop.get("value", ""), path, name, f"{element.tag} '{element.get('id', '')}'")
            continue
        same = [known for known in PROPERTY_NAMES if known.casefold() == name.casefold()]
        if same:  # read by no one: the run would go on without the curve or role it was given
            raise InputError(path, f"{_name(element)}: property names are matched exactly: write {same[0]!r}, "
                                   f"not {name!r}", field=name)
        near = difflib.get_close_matches(name.casefold(), PROPERTY_NAMES, n=1, cutoff=0.8)
        if near:
            log.warning("%s: %s: property %r is not one batio reads (names are matched exactly); did you mean %r?",
                        path, _name(element), name, near[0])


def check_platform_xml(path):
    """Raise InputError on the first value or structure SimGrid would take wrongly or abort on."""
    root = platform_xml(path)
    version = root.get("version")
    if version not in VERSIONS:
        raise InputError(path, f"platform version {version!r}: SimGrid 3.32 reads version 4.1 (or 4, 4.0); "
                               "convert an older file with SimGrid's simgrid_update_xml", field="version")
    for element in root.iter():
        for attribute, kind in NUMERIC.get(element.tag, {}).items():
            text = element.get(attribute)
            if text is not None:
                _check_number(path, element, attribute, kind, text)
        if element.tag in ("host", "cluster", "cabinet", "peer", "link", "zone", "AS") and not element.get("id"):
            raise InputError(path, f"a <{element.tag}> has an empty or no 'id'", field="id")
        if element.tag in ("zone", "AS"):
            _check_routes(path, element)
        _check_properties(path, element)
    _check_route_ends(path, root)  # once every id is known to be given
