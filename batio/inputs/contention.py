"""Storage throughput that depends on how many clients use it (beyond Batsim).

Design notes: docs/internals.md.
"""

from dataclasses import dataclass
import logging
import re

from batio.errors import InputError
from batio.inputs.platform import platform_xml
from batio.quantities import BANDWIDTH_UNITS, fails_with, quantity, whole

log = logging.getLogger(__name__)

PROPERTY = "batio:contention"
READ_PROPERTY = "batio:contention_read"
WRITE_PROPERTY = "batio:contention_write"
PROPERTIES = (PROPERTY, READ_PROPERTY, WRITE_PROPERTY)
READ, WRITE = "read", "write"
MAX_CLIENTS = 10 ** 9

_POINT = re.compile(r"\s*([0-9]+)\s*:\s*(\S+)\s*", re.ASCII)


@dataclass(frozen=True)
class Curve:
    """Aggregate throughput (bytes/s) at each measured number of clients."""
    points: tuple  # ((clients, bytes per second), ...), clients strictly increasing

    def __call__(self, clients):
        points = self.points
        if clients <= points[0][0]:
            return points[0][1]
        for (k0, c0), (k1, c1) in zip(points, points[1:]):
            if clients <= k1:
                return c0 + (c1 - c0) * (clients - k0) / (k1 - k0)
        return points[-1][1]

    def text(self):
        return " ".join(f"{k}:{c:.6g}" for k, c in self.points)


def parse_curve(text, source, prop, where):
    """A curve from 'clients:throughput ...'; one-line errors name file, element and property."""
    fail = fails_with(source, f"{where}: ", field=prop)
    parts = [part for part in re.split(r"[\s,;]+", text.strip()) if part]
    if not parts:
        fail("is empty; expected points 'clients:throughput', e.g. '1:10GBps 8:7GBps'")
    points: list[tuple[float, float]] = []
    for part in parts:
        match = _POINT.fullmatch(part)
        if not match:
            fail(f"point '{part}' is not 'clients:throughput' with a whole number of clients in ASCII digits "
                 "(e.g. '8:7e9' or '8:7GBps')")
        number_of_clients, number = match.groups()
        point_fail = fails_with(source, f"{where}: point '{part}': ", field=prop)
        throughput = quantity(number, BANDWIDTH_UNITS, point_fail, what="throughput")
        clients = whole(number_of_clients, point_fail, low=1, high=MAX_CLIENTS, what="the number of clients")
        if points and clients <= points[-1][0]:
            fail(f"point '{part}': clients must increase from point to point (after {points[-1][0]})")
        points.append((clients, throughput))
    return Curve(tuple(points))


def _curves(props, source, where):
    """(read curve, write curve) of one element's properties; None where not declared."""
    unknown = [p for p in props if p.startswith("batio:contention") and p not in PROPERTIES]
    if unknown:
        raise InputError(source, f"{where}: unknown property (known: {', '.join(PROPERTIES)})", field=unknown[0])
    parsed = {p: parse_curve(props[p], source, p, where) for p in PROPERTIES if p in props}
    both = parsed.get(PROPERTY)
    return parsed.get(READ_PROPERTY, both), parsed.get(WRITE_PROPERTY, both)


def link_properties(path):
    """link id -> its <prop> values, for the links that have any."""
    return {link.get("id"): {p.get("id"): p.get("value", "") for p in link.findall("prop")}
            for link in platform_xml(path).iter("link") if link.find("prop") is not None}


def declares_curve(path):
    """Whether a platform file declares a contention curve on a link, a host or a cluster's hosts."""
    return any(prop.get("id", "").startswith(PROPERTY) for element in platform_xml(path).iter()
               if element.tag in ("host", "cluster", "cabinet", "link") for prop in element.findall("prop"))


class _RegulatedLink:
    def __init__(self, link):
        self.link = link
        self.nominal = link.bandwidth
        self.curves = {READ: None, WRITE: None}
        self.declared_by = {READ: None, WRITE: None}
        self.clients = {READ: 0, WRITE: 0}
        self.bandwidth = self.nominal

    def declare(self, direction, curve, who, source):
        if curve is None:
            return
        if self.curves[direction] is not None and self.curves[direction] != curve:
            raise InputError(source, f"link '{self.link.name}' gets two different {direction} curves, from "
                                     f"{self.declared_by[direction]} and from {who}", field=PROPERTY)
        self.curves[direction] = curve
        self.declared_by[direction] = who

    def capacity(self):
        total = self.clients[READ] + self.clients[WRITE]
        return sum(count * (self.curves[d](total) if self.curves[d] else self.nominal)
                   for d, count in self.clients.items()) / total

    def update(self):
        """Set the curve's bandwidth for the clients now on the link (the XML
        bandwidth when none is left: other traffic may cross it); True if it changed."""
        empty = self.clients[READ] + self.clients[WRITE] == 0
        capacity = self.nominal if empty else self.capacity()
        if capacity == self.bandwidth:
            return False
        self.bandwidth = capacity
        self.link.set_bandwidth(capacity)
        return True


class ContentionModel:
    """Counts the clients on each regulated link and sets its bandwidth."""

    def __init__(self, regulated):
        self.regulated = regulated  # SimGrid link name -> _RegulatedLink
        self.bandwidth_changes = 0  # set_bandwidth calls, for the run record
        self._crossed = {}  # (source host name, destination host name) -> [_RegulatedLink]

    @classmethod
    def build(cls, engine, platform):
        """The model of a loaded platform, or None when it declares no contention curve."""
        source = platform.path
        links = {link.name: link for link in engine.all_links}
        regulated: dict[str, _RegulatedLink] = {}

        def regulate(link, direction, curve, who):
            entry = regulated.setdefault(link.name, _RegulatedLink(link))
            entry.declare(direction, curve, who, source)

        for link_id, props in link_properties(source).items():
            read, write = _curves(props, source, f"link '{link_id}'")
            if read is None and write is None:
                continue
            # A SPLITDUPLEX link is two SimGrid links, one per direction of use.
            names = [n for n in (link_id, f"{link_id}_UP", f"{link_id}_DOWN") if n in links]
            for name in names:
                regulate(links[name], READ, read, f"link '{link_id}'")
                regulate(links[name], WRITE, write, f"link '{link_id}'")

        storage = {r.name for r in platform.storage}
        hosts = {h.name: h for h in engine.all_hosts}
        compute = [hosts[r.name] for r in platform.compute]
        for name, props in sorted(platform.properties.items()):
            if not any(p.startswith("batio:contention") for p in props):
                continue
            where = f"host '{name}'"
            if name not in storage:
                declared = next(p for p in props if p.startswith("batio:contention"))
                raise InputError(source, f"{where} is not a storage host (role 'storage'); a contention curve "
                                         "goes on a storage host or on a <link>", field=declared)
            read, write = _curves(props, source, where)
            host = hosts[name]
            # SimGrid 3.35 and 4.0 know a <cluster>'s way out of its zone only once
            # the platform is sealed (route_to raised IndexError: unordered_map::at);
            # run() would seal it anyway, and nothing before run changes it.
            engine.netzone_root.seal()
            if write is not None:
                regulate(_narrowest_shared([c.route_to(host)[0] for c in compute], nearest_last=True,
                                           source=source, where=where, direction=WRITE), WRITE, write, where)
            if read is not None:
                regulate(_narrowest_shared([host.route_to(c)[0] for c in compute], nearest_last=False,
                                           source=source, where=where, direction=READ), READ, read, where)
        if not regulated:
            return None
        for entry in regulated.values():
            log.info("contention: link %s, read %s, write %s", entry.link.name,
                     entry.curves[READ] and entry.curves[READ].text(),
                     entry.curves[WRITE] and entry.curves[WRITE].text())
        return cls(regulated)

    def _links_crossed(self, source, destination):
        key = (source.name, destination.name)
        crossed = self._crossed.get(key)
        if crossed is None:
            crossed = [self.regulated[link.name] for link in source.route_to(destination)[0]
                       if link.name in self.regulated]
            self._crossed[key] = crossed
        return crossed

    def started(self, streams):
        """``streams``: [(source host, destination host, READ or WRITE)], one per client.
        Returns what ``ended`` takes back."""
        counted = []
        for source, destination, direction in streams:
            for entry in self._links_crossed(source, destination):
                entry.clients[direction] += 1
                counted.append((entry, direction))
        self._update(counted)
        return counted

    def ended(self, counted):
        for entry, direction in counted:
            entry.clients[direction] -= 1
        self._update(counted)

    def _update(self, counted):
        for entry in {id(e): e for e, _ in counted}.values():
            self.bandwidth_changes += entry.update()


def _narrowest_shared(routes, nearest_last, source, where, direction):
    """The narrowest link on every route; ties to the one nearest the storage host."""
    shared = set.intersection(*({link.name for link in route} for route in routes)) if routes else set()
    candidates = [link for link in (reversed(routes[0]) if nearest_last else routes[0]) if link.name in shared]
    if not candidates:
        raise InputError(source, f"{where}: no link is crossed by every compute host's {direction} route, so "
                                 "there is no storage link to regulate; put the curve on a <link>",
                         field=PROPERTY)
    return min(candidates, key=lambda link: link.bandwidth)  # min keeps the first of equals
