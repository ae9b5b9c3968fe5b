"""Contention-curve variants of the papers' platforms, from one published loss curve.

Every variant is a bundled platform with a ``batio:contention`` curve on its
storage link(s): the platform's own no-loss curve times a relative loss
r_s(k) taken from a published measurement:

    r(k)   = Xie et al., ACM TOS 15(4):26, 2020, Fig. 9 (Titan/Spider II,
             clients writing to one Lustre OST, median, 64 MB transfers):
             2:205 4:225 8:210 16:188 32:168 64:147 128:143 MB/s, read by
             eye (shared/reference/pfs_contention.md), divided by the peak
             (225 at 4 clients); 1 up to the peak (the rising part is the
             clients' own limit, which each platform already models); flat
             beyond 128 clients;
    r_s(k) = max(0.02, 1 - s (1 - r(k))): the same shape, its loss scaled
             by the steepness s (s = 0: no loss; s = 1: as published, 36 %
             lost at 128 clients or more; s = 2: twice the loss at every k).

Clients are counted as the engine counts them (docs/formats.md): one per
job host that moves bytes. Nothing is fitted to a paper's result: s = 1 is
the published curve, and the other values of s are the sweep.

    .venv/bin/python scripts/contention_platforms.py --bundle          # platforms/*_degrading.xml (s = 1)
    .venv/bin/python scripts/contention_platforms.py --steepness 0 2 4 --out out/contention/platforms
"""

import argparse
from pathlib import Path
import re

from batio.inputs.contention import Curve

ROOT = Path(__file__).resolve().parents[1]
GiB = 2 ** 30

# Xie et al. 2020, Fig. 9 (MB/s at each number of clients), as read in pfs_contention.md.
XIE_FIG9 = ((2, 205), (4, 225), (8, 210), (16, 188), (32, 168), (64, 147), (128, 143))
XIE_PEAK = max(v for _, v in XIE_FIG9)
XIE_KNOTS = [1] + [k for k, _ in XIE_FIG9 if k >= 4]


def published_loss(k):
    """r(k): Xie Fig. 9 relative to its peak, 1 up to the peak's client count."""
    peak_clients = next(c for c, v in XIE_FIG9 if v == XIE_PEAK)
    if k <= peak_clients:
        return 1.0
    return Curve(XIE_FIG9)(k) / XIE_PEAK


def scaled_loss(k, steepness):
    return max(0.02, 1 - steepness * (1 - published_loss(k)))


# Stria's no-loss curve: paper 000's Fig. 4 as printed (stria15_lustre.md), GiB/s.
STRIA_FIG4 = ((1, 4.0), (3, 10.0), (15, 15.0))


def _value(points):
    return Curve(tuple(points)).text()


def curves(platform, steepness):
    """{link id: property value} of one platform at one steepness."""
    if platform == "stria15_lustre_fig4":
        # Two piecewise-linear factors: a point at every client count up to 16 keeps the product exact.
        return {"lustre_sustained": _value([(k, Curve(STRIA_FIG4)(k) * scaled_loss(k, steepness) * GiB)
                                             for k in range(1, 17)])}
    nominal = {"periodic_rack": {"storage": 240e9}, "catios_cluster": {"pfs_link": 6e9},
               "theta_quarter": {"pfs_write": 43e9, "pfs_read": 60e9}}[platform]
    return {element: _value([(k, bandwidth * scaled_loss(k, steepness)) for k in XIE_KNOTS])
            for element, bandwidth in nominal.items()}


PLATFORMS = ("stria15_lustre_fig4", "periodic_rack", "catios_cluster", "theta_quarter")


def variant(platform, steepness, header=None):
    """The platform's XML with its curves at this steepness (an existing curve is replaced)."""
    from batio.twin.calibrate import insert_property
    source = ROOT / "platforms" / f"{platform}.xml"
    text = source.read_text()
    text = re.sub(r'\s*<prop id="batio:contention" value="[^"]*"/>\n?(\s*)</link>', r"\n\1</link>", text)
    text = re.sub(r'(<link [^>]*?)>\n\s*</link>', r"\1/>", text)
    for element, value in curves(platform, steepness).items():
        text = insert_property(text, element, "batio:contention", value, source)
    if header:
        assert "--" not in header, "XML comments cannot hold '--'"
        text = text.replace('<platform version="4.1">', f"<!-- {header} -->\n<platform version=\"4.1\">", 1)
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", action="store_true", help="write platforms/*_degrading.xml (s = 1)")
    parser.add_argument("--steepness", type=float, nargs="*", default=[], help="values of s for --out")
    parser.add_argument("--platforms", nargs="*", default=list(PLATFORMS))
    parser.add_argument("--out", help="folder for the variants PLATFORM_loss_sS.xml")
    args = parser.parse_args()
    if args.bundle:
        for platform in args.platforms:
            name = "stria15_lustre_degrading" if platform == "stria15_lustre_fig4" else f"{platform}_degrading"
            header = (f"{platform}.xml with a throughput loss beyond saturation: Xie et al., ACM TOS 2020, "
                      "Fig. 9, relative to its peak (batio:contention, embedded engine only). Written by "
                      "scripts/contention_platforms.py with option bundle; sources and choices in the platform's .md")
            (ROOT / "platforms" / f"{name}.xml").write_text(variant(platform, 1.0, header))
            print(f"platforms/{name}.xml")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for platform in args.platforms:
            for steepness in args.steepness:
                path = out / f"{platform}_loss_s{steepness:g}.xml"
                source = f"{platform}.xml, Xie et al. 2020 Fig. 9 loss x {steepness:g}"
                path.write_text(variant(platform, steepness, source))
                print(path)


if __name__ == "__main__":
    main()
