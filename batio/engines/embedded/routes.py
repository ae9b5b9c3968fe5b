"""How fast a platform lets a job move bytes alone: its clients' and its file system's bandwidths.

A ``parallel_homogeneous_pfs`` phase on n hosts is one SimGrid parallel task
(ptask_L07): each host's flow crosses its own links (the client's) and the
links every host shares on the way to the storage host (the file system's).
Alone, a phase moving b bytes per host takes ``b / min(client, fs / n)``.
The links of two compute hosts' routes tell which is which: the links both
cross are shared. SimGrid allows one engine per process, so the routes are
read in a child process (``python -m batio.engines.embedded.routes PLATFORM``).
"""

from dataclasses import dataclass
import json
import math
import subprocess
import sys

from batio.errors import InputError


@dataclass(frozen=True)
class Bandwidths:
    """Bytes/s of the narrowest private (client) and shared (file system) link, per direction;
    ``math.inf`` where a route has no such link."""

    client_read: float
    fs_read: float
    client_write: float
    fs_write: float

    def alone(self, read_per_host, written_per_host, hosts):
        """Seconds a job's read and write phases take alone on ``hosts`` hosts."""
        return (read_per_host / min(self.client_read, self.fs_read / hosts)
                + written_per_host / min(self.client_write, self.fs_write / hosts))


def _split(routes):
    """(narrowest private link, narrowest shared link) of routes given as [{name: bandwidth}]."""
    shared = set(routes[0]).intersection(*routes[1:]) if len(routes) > 1 else set(routes[0])
    private = [bw for route in routes for name, bw in route.items() if name not in shared]
    return min(private, default=math.inf), min((routes[0][name] for name in shared), default=math.inf)


def _load(path):
    """(SimGrid's hosts by name, the platform as Batsim numbers it) of a platform file."""
    import simgrid

    from batio.inputs.platform import classify
    engine = simgrid.Engine(["routes", "--cfg=host/model:ptask_L07", "--log=root.thres:critical"])
    engine.load_platform(path)
    engine.netzone_root.seal()
    hosts = {host.name: host for host in engine.all_hosts}
    return hosts, classify(path, list(hosts))


def _route(source, destination):
    """{link name: bandwidth} of the route between two SimGrid hosts."""
    return {link.name: link.bandwidth for link in source.route_to(destination)[0]}


def _measure(path):
    hosts, platform = _load(path)
    if not platform.storage:
        raise InputError(path, "has no storage host (role 'storage'): no file system to move bytes to")
    storage = hosts[platform.storage[0].name]
    clients = [hosts[resource.name] for resource in platform.compute[:2]]
    writes = [_route(client, storage) for client in clients]
    reads = [_route(storage, client) for client in clients]
    client_read, fs_read = _split(reads)
    client_write, fs_write = _split(writes)
    return {"client_read": client_read, "fs_read": fs_read, "client_write": client_write, "fs_write": fs_write}


def _capacity(path):
    """Bytes/s all jobs together can read, and write: the narrowest link that every route between the
    compute hosts and every storage host crosses, or the storage hosts' own narrowest shared links
    added up when they are narrower (a link several storage hosts share is counted once this way)."""
    hosts, platform = _load(path)
    clients = [hosts[resource.name] for resource in platform.compute[:1] + platform.compute[-1:]]
    found = {}
    for direction in ("read", "write"):
        per_storage, everywhere = [], None
        for storage in (hosts[resource.name] for resource in platform.storage):
            routes = [_route(storage, client) if direction == "read" else _route(client, storage)
                      for client in clients]
            shared = set(routes[0]).intersection(*routes[1:])
            per_storage.append(min((routes[0][name] for name in shared), default=math.inf))
            everywhere = shared if everywhere is None else everywhere & shared
            widths = routes[0]
        common = min((widths[name] for name in everywhere or ()), default=math.inf)
        found[direction] = min(common, sum(per_storage)) if per_storage else math.inf
    return found


def _child(platform, *flags):
    """The last line of JSON the child process prints for ``platform``; InputError when it fails."""
    done = subprocess.run([sys.executable, "-m", "batio.engines.embedded.routes", str(platform), *flags],
                          capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        said = (done.stdout + done.stderr).strip().splitlines()
        raise InputError(platform, f"cannot read its routes to the storage host: {said[-1] if said else 'no answer'}")
    return {key: math.inf if value is None else value for key, value in json.loads(lines[-1]).items()}


def capacity(platform):
    """{"read": bytes/s, "write": bytes/s} the platform's storage serves all jobs at most
    (``math.inf`` without a bounding link), read by SimGrid in a child process."""
    return _child(platform, "--capacity")


def bandwidths(platform):
    """The Bandwidths of a platform file, read by SimGrid in a child process."""
    values = _child(platform)
    if math.isinf(values["fs_read"]) and math.isinf(values["client_read"]):
        raise InputError(platform, "no link between the compute hosts and the storage host bounds a transfer")
    return Bandwidths(**values)


if __name__ == "__main__":
    from batio.errors import exits_on_error

    def _main():
        found = _capacity(sys.argv[1]) if sys.argv[2:] == ["--capacity"] else _measure(sys.argv[1])
        print(json.dumps({key: None if math.isinf(value) else value for key, value in found.items()}))

    exits_on_error(_main)()
