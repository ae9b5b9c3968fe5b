"""``batio platform``: a SimGrid platform from a short description of a machine.

Design notes: docs/internals.md.
"""

from pathlib import Path
import re
from xml.sax.saxutils import quoteattr

from batio.errors import InputError
from batio.inputs.contention import PROPERTY, parse_curve
from batio.inputs.platform_check import MAX_CORES
from batio.quantities import BANDWIDTH_UNITS, MAX_LATENCY, MEMORY_UNITS, SPEED_UNITS, TIME_UNITS, fails_with, quantity

MAX_NODES = 1 << 20


def _quantity(text, units, option, what, **bounds):
    return quantity(text, units, fails_with(option), what=what, **bounds)


def contention_value(spec, unit="GB/s"):
    """The ``batio:contention`` value from a curve ('1:1GBps 8:6GBps'), a measured CSV
    (``batio calibrate``'s input) or a ``property.xml`` that ``batio calibrate`` wrote."""
    path = Path(spec)
    if path.suffix == ".csv":
        from batio.twin.calibrate import property_value, read_measurement
        value = property_value(read_measurement(path, unit, "--contention-unit"), unit)
    elif path.suffix == ".xml":
        if not path.is_file():
            raise InputError(spec, "no such file (expected the property.xml batio calibrate writes)")
        match = re.search(r'<prop\s+id="batio:contention"\s+value="([^"]*)"', path.read_text())
        if not match:
            raise InputError(spec, "has no <prop id=\"batio:contention\" value=\"...\"/> (batio calibrate "
                                   "--direction both writes one)", field=PROPERTY)
        value = match.group(1)
    else:
        value = spec
    parse_curve(value, "--contention", PROPERTY, "pfs_link")
    return value


def platform_xml(nodes, cores, speed, node_link, pfs_bandwidth, latency="50us", contention=None, memory=None):
    """The platform's XML text; every quantity is checked and written in SimGrid's base units."""
    if not 1 <= nodes <= MAX_NODES:
        raise InputError("--nodes", f"must be from 1 to {MAX_NODES}, got {nodes}")
    if not 1 <= cores <= MAX_CORES:
        raise InputError("--cores", f"must be from 1 to {MAX_CORES}, got {cores}")
    flops = _quantity(speed, SPEED_UNITS, "--speed", "speed")
    link = _quantity(node_link, BANDWIDTH_UNITS, "--node-link", "bandwidth")
    pfs = _quantity(pfs_bandwidth, BANDWIDTH_UNITS, "--pfs-bandwidth", "bandwidth")
    lat = _quantity(latency, TIME_UNITS, "--latency", "latency", low=0.0, high=MAX_LATENCY)
    prop = "" if contention is None else f"\n      <prop id={quoteattr(PROPERTY)} value={quoteattr(contention)}/>\n    "
    node_props = [("cores", str(cores)), ("link_bandwidth", f"{link:.10g}")]
    if memory is not None:
        node_props.append(("memory_bytes", f"{_quantity(memory, MEMORY_UNITS, '--memory', 'memory', low=1.0, high=1e18):.10g}"))
    node_props_xml = "".join(f'\n      <prop id="{key}" value="{value}"/>' for key, value in node_props)
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- Made by batio platform: {nodes} compute hosts node0..node{nodes - 1} ({cores} cores of {flops:.10g} flop/s each), each behind
     its own {link:.10g} B/s link; storage host pfs behind pfs_link ({pfs:.10g} B/s), which all file-system
     traffic crosses; master_host (no role property: Batsim makes it the master). -->
<platform version="4.1">
  <zone id="machine" routing="Full">
    <cluster id="compute" prefix="node" suffix="" radical="0-{nodes - 1}" speed="{flops:.10g}f" core="{cores}"
             bw="{link:.10g}Bps" lat="{lat:.10g}s">{node_props_xml}
    </cluster>
    <zone id="master_zone" routing="Full">
      <host id="master_host" speed="{flops:.10g}f"/>
    </zone>
    <zone id="pfs_zone" routing="Full">
      <host id="pfs" speed="{flops:.10g}f">
        <prop id="role" value="storage"/>
        <prop id="bandwidth" value="{pfs:.10g}"/>
      </host>
    </zone>
    <link id="pfs_link" bandwidth="{pfs:.10g}Bps" latency="{lat:.10g}s">{prop}</link>
    <link id="service" bandwidth="{link:.10g}Bps" latency="{lat:.10g}s"/>
    <zoneRoute src="compute" dst="pfs_zone" gw_src="nodecompute_router" gw_dst="pfs">
      <link_ctn id="pfs_link"/>
    </zoneRoute>
    <zoneRoute src="compute" dst="master_zone" gw_src="nodecompute_router" gw_dst="master_host">
      <link_ctn id="service"/>
    </zoneRoute>
    <zoneRoute src="master_zone" dst="pfs_zone" gw_src="master_host" gw_dst="pfs">
      <link_ctn id="service"/>
    </zoneRoute>
  </zone>
</platform>
"""
