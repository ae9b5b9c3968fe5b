# The batio scheduler image: Debian 12 (Python 3.11 and python3-simgrid), batio and pybatsim.
# Used by docker-compose.yml to serve a scheduler to a Batsim container.
FROM debian:bookworm-slim
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       python3 python3-venv python3-simgrid \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /batio
COPY . /batio
RUN scripts/install.sh
ENV PATH=/batio/.venv/bin:$PATH
# SCHEDULER is a batio name (easy, conservative...), a pybatsim name or a file path; OPTIONS is JSON.
ENV SCHEDULER=easy OPTIONS={} PORT=28000
CMD ["sh", "-c", "exec python -m batio.serve \"$SCHEDULER\" --options \"$OPTIONS\" --port \"$PORT\""]
