# Mock server of the Infrastructure Deployment Platform API.
#   docker build -t idp-mockserver:local .
#   docker run --rm -p 8080:8080 idp-mockserver:local
# Mount your own fixtures over /srv/mockserver/fixtures, your scenarios over /srv/mockserver/scenarios
# (and set MOCKSERVER_SCENARIOS=/srv/mockserver/scenarios to activate them).
# Keep sandboxes and snapshots across restarts: -v mockstate:/srv/mockserver/state
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# jemalloc: the allocator `mockserver serve` picks where installed (--allocator auto): the least CPU per
# request, and freed memory handed back to the system.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY mockserver/ mockserver/
COPY fixtures/ fixtures/
COPY scenarios/ scenarios/
RUN pip install --no-cache-dir . \
    && rm -rf /src

# Defaults shipped in the image; mount your own over these folders.
COPY fixtures/ /srv/mockserver/fixtures/
COPY scenarios/ /srv/mockserver/scenarios/
# The state file (every sandbox and snapshot) lives in a volume: mount a named one to keep it across restarts.
RUN mkdir -p /srv/mockserver/state && chown 10001:10001 /srv/mockserver/state
VOLUME ["/srv/mockserver/state"]

WORKDIR /srv/mockserver
ENV HOST=0.0.0.0 \
    PORT=8080 \
    MOCKSERVER_FIXTURES=/srv/mockserver/fixtures \
    MOCKSERVER_STATE_FILE=/srv/mockserver/state/state.bin

USER 10001:10001
EXPOSE 8080

# Exec form, no shell (the slim image has no curl): Python reads the port the server uses
# (MOCKSERVER_PORT, else PORT) and ignores any HTTP proxy set in the environment.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request as r; port = os.environ.get('MOCKSERVER_PORT') or os.environ.get('PORT') or '8080'; opener = r.build_opener(r.ProxyHandler({})); sys.exit(opener.open(f'http://127.0.0.1:{port}/_mock/health', timeout=4).status != 200)"]

CMD ["mockserver", "serve"]
