"""File names made from names users write (policies, workloads, platforms)."""

import re


def slug(text, limit=48):
    """``text`` as a file-name fragment."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", str(text)).strip("_.")[:limit] or "x"
