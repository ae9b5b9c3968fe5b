"""Is the container image built from the pyproject.toml of the checkout it runs?

docker-compose.yml mounts the checkout over the image's own copy of batio
(at /batio), so the checkout's code runs with the Python packages the image
installed when it was built. When pyproject.toml's dependencies have changed
since, that code would fail deep inside with an ImportError; this check says
so first, in one line. The Dockerfile records the SHA-256 of the
pyproject.toml it installed in ``RECORD``. The check runs inside batio's
image: where ``RECORD`` exists, or where docker-compose.yml says so by
naming the image in ``BATIO_CONTAINER_IMAGE`` (an image built before the
record was written has none). Standard library only: it must run before any
of batio's dependencies is imported.

    python -m batio.image_check      # exit 2 with the one line when the image is stale
"""

import hashlib
import os
from pathlib import Path
import sys

RECORD = Path("/etc/batio/pyproject.sha256")
# Set by docker-compose.yml in every service: the image the container runs.
IMAGE_VARIABLE = "BATIO_CONTAINER_IMAGE"
DEFAULT_IMAGE = "batio-batsim:4.2.1"
# The checkout's pyproject.toml: the folder above the batio package imported.
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def recorded_sha256(record):
    """The hash a record holds (``sha256sum``'s line: the hash, then the file name), or None."""
    try:
        words = Path(record).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    return words[0].lower() if words else None


def stale_image_error(record, pyproject, image):
    """The one line that says the image ``image`` is not built from ``pyproject``, or None when it is
    (or when there is no pyproject.toml to hold it against: batio installed from a wheel)."""
    rebuild = f"rebuild it with `docker compose build` (or `podman build -t {image} .`)"
    if not Path(pyproject).is_file():
        return None
    recorded = recorded_sha256(record)
    if recorded is None:
        return (f"image {image} records no hash of the pyproject.toml it was built from ({record}): "
                f"it predates that record; {rebuild}")
    if recorded != sha256(pyproject):
        return f"image {image} was built from another pyproject.toml than {pyproject}: {rebuild}"
    return None


def image_error(environ=os.environ, record=RECORD, pyproject=PYPROJECT):
    """``stale_image_error`` where batio runs in its image (see the module's docstring), else None."""
    if not (Path(record).exists() or environ.get(IMAGE_VARIABLE)):
        return None
    return stale_image_error(record, pyproject, environ.get(IMAGE_VARIABLE) or DEFAULT_IMAGE)


def exit_if_stale(environ=os.environ):
    """End the process with the one line and exit status 2 when the image is stale."""
    error = image_error(environ)
    if error:
        print(f"batio: error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    exit_if_stale()
