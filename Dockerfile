# batio's image, from debian:bookworm (docs/containers.md). Three stages:
#   build    compiles Batsim 4.2.1 and batsched (the revision Batsim 4.2.1's
#            default.nix pins) with intervalset, loguru and redox into
#            /opt/batsim (containers/build.sh)
#   batsim   the run-time libraries and /opt/batsim: Batsim and batsched only
#            (`--target batsim`; nothing of batio's names or uses this image)
#   batio    (the last stage, built by default) the same plus batio and
#            pybatsim: it serves a scheduler, runs Batsim, or runs `batio
#            compare`. docker-compose.yml and `--engine docker` name it
#            batio-batsim:4.2.1 ($BATIO_IMAGE overrides the name):
#              docker compose build    or    podman build -t batio-batsim:4.2.1 .
# No build arguments: the revisions are those of containers/versions.env,
# copied in and read by build.sh, which refuses any other. Sources come from
# containers/sources/ when containers/sources.sh filled it (machines without
# internet), else from their public repositories.
FROM debian:bookworm AS build
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       g++ make cmake meson ninja-build pkg-config git ca-certificates \
       libsimgrid-dev libboost-dev libboost-locale-dev libboost-regex-dev libboost-system-dev \
       libzmq3-dev cppzmq-dev rapidjson-dev libpugixml-dev libdocopt-dev libgmp-dev libhiredis-dev libev-dev \
    && rm -rf /var/lib/apt/lists/*
COPY containers/versions.env containers/build.sh containers/sources/ /src/
RUN set -a && . /src/versions.env && set +a && /src/build.sh

FROM debian:bookworm AS batsim
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       libsimgrid3.32 libzmq5 libdocopt0 libpugixml1v5 libhiredis0.14 libev4 \
       libboost-locale1.74.0 libboost-regex1.74.0 libgmpxx4ldbl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/batsim /opt/batsim
ENV PATH=/opt/batsim/bin:$PATH
# Fails the build when a library is missing at run time.
RUN batsim --version && batsched --help >/dev/null

FROM batsim AS batio
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       python3 python3-venv python3-simgrid ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /batio
COPY pyproject.toml setup.py README.md LICENSE COPYING /batio/
COPY batio /batio/batio
COPY schedulers /batio/schedulers
COPY platforms /batio/platforms
COPY workloads /batio/workloads
# ca-certificates.crt: a machine's own CA bundle, for builds behind a TLS proxy (sources.sh
# copies it; README.md is there so that the line holds without it).
COPY containers/sources/README.md containers/sources/ca-certificates.cr[t] /src/
RUN if [ -f /src/ca-certificates.crt ]; then export PIP_CERT=/src/ca-certificates.crt; fi \
    && python3 -m venv --system-site-packages /opt/venv \
    && /opt/venv/bin/pip install -q --no-cache-dir -e . \
    && /opt/venv/bin/pip install -q --no-cache-dir --no-deps pybatsim==3.2.1 \
    && rm -rf /src \
    && mkdir -p /etc/batio && sha256sum pyproject.toml > /etc/batio/pyproject.sha256
# What the packages above were installed from: the compose services mount a checkout over
# /batio, and batio/image_check.py refuses in one line to run its code when that checkout's
# pyproject.toml differs (rebuild the image).
ENV PATH=/opt/venv/bin:$PATH
# The compose services (docker-compose.yml) choose what runs: `python -m batio.compose scheduler|batsim`.
CMD ["batio", "--help"]
