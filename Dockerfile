# Upwatch in a container: the whole service in one process (`upwatch serve`) on SQLite in the
# /data volume, or any role of a distributed deployment (compose.yaml).
#
#   docker build -t upwatch .
#   docker run -d --name upwatch -p 8000:8000 -v upwatch-data:/data \
#     -e UPWATCH_PUBLIC_URL=https://status.example.com upwatch
#
# Configuration is by environment only: the UPWATCH_* settings (README, "Configuration").
# Secrets may come from files instead, as container secrets do: UPWATCH_<NAME>_FILE for
# UPWATCH_DATABASE_URL, UPWATCH_REDIS_URL, UPWATCH_SECRET_KEY, UPWATCH_SMTP_USERNAME,
# UPWATCH_SMTP_PASSWORD and UPWATCH_METRICS_TOKEN, e.g.
#   UPWATCH_SECRET_KEY_FILE=/run/secrets/upwatch_secret_key
# (setting both a variable and its _FILE is refused). Without UPWATCH_SECRET_KEY the service
# keeps a generated key in /data/secret_key.
#
# The base is any Debian-based image with Python 3.11 or later on PATH as `python` (and pip
# 22.3 or later), the same for every stage (the virtual environment built in one runs in the
# last):
#   docker build --build-arg BASE_IMAGE=python:3.13-slim -t upwatch .
# A package index other than PyPI: --build-arg PIP_INDEX_URL=https://... (and
# PIP_EXTRA_INDEX_URL); the proxy variables (HTTPS_PROXY, ...) pass through as usual.
# Build with Podman as `podman build --format docker ...`: the OCI format has no HEALTHCHECK.
ARG BASE_IMAGE=python:3.12-slim

# What to install, read from pyproject.toml alone: the next stage installs it in a layer of
# its own, which stays cached for as long as the dependencies stay the same (a change to
# the code, or to pyproject.toml's tool settings, rebuilds only the layers after it).
# EXTRAS names the package's extras to include (e.g. postgres,redis,client, or all).
FROM ${BASE_IMAGE} AS requirements
ARG EXTRAS=postgres,redis
WORKDIR /src
COPY pyproject.toml ./
RUN python -c "import os, tomllib; \
data = tomllib.load(open('pyproject.toml', 'rb')); project = data['project']; \
extra = project['optional-dependencies']; \
names = lambda text: [e.strip() for e in text.split(',') if e.strip()]; \
own = lambda r: r.partition('[')[0].strip().lower() == project['name']; \
inner = lambda r: names(r.partition('[')[2].partition(']')[0]); \
expand = lambda e: [x for r in extra[e] for x in (sum(map(expand, inner(r)), []) if own(r) else [r])]; \
wanted = project['dependencies'] + sum(map(expand, names(os.environ['EXTRAS'])), []); \
open('/requirements.txt', 'w').write('\n'.join(dict.fromkeys(wanted)) + '\n'); \
open('/build-requirements.txt', 'w').write('\n'.join(data['build-system']['requires']) + '\n')"

FROM ${BASE_IMAGE} AS dependencies
ARG PIP_INDEX_URL=
ARG PIP_EXTRA_INDEX_URL=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
# The service's environment with the dependencies only (/opt/upwatch, without pip: the final
# image copies it whole) and a builder's (setuptools, for the wheel). Cached until the
# dependencies change.
COPY --from=requirements /requirements.txt /build-requirements.txt /tmp/
RUN python -m venv /opt/upwatch \
    && /opt/upwatch/bin/pip install --quiet -r /tmp/requirements.txt \
    && /opt/upwatch/bin/pip uninstall --quiet --yes pip setuptools \
    && python -m venv /opt/builder \
    && /opt/builder/bin/pip install --quiet -r /tmp/build-requirements.txt

# The project's wheel, which must carry every file the package reads at run time (templates
# and static files included). Installed here with its extras and nothing from an index, it
# proves the dependencies above complete.
FROM dependencies AS build
ARG EXTRAS=postgres,redis
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY upwatch ./upwatch
RUN /opt/builder/bin/pip wheel --quiet --no-deps --no-build-isolation -w /wheels . \
    && python -m pip --python /opt/upwatch/bin/python install --quiet --no-index \
        "$(ls /wheels/upwatch-*.whl)[${EXTRAS}]" \
    && python -m pip --python /opt/upwatch/bin/python check

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="Upwatch" \
      org.opencontainers.image.description="Open-source uptime monitoring" \
      org.opencontainers.image.licenses="AGPL-3.0-or-later" \
      org.opencontainers.image.source="https://github.com/upwatch/upwatch"
# A user of its own, not root; numeric in USER so that "run as non-root" checks can see it.
# A named volume starts as a copy of /data, owned by this user; a bind-mounted directory
# must be writable by uid 10001.
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin upwatch \
    && mkdir /data && chown 10001:10001 /data && chmod 700 /data
# The dependencies, a layer that stays the same while they do; then the project alone.
COPY --from=dependencies /opt/upwatch /opt/upwatch
COPY --from=build /wheels /tmp/wheels
RUN python -m pip --python /opt/upwatch/bin/python install --quiet --no-deps --no-index \
        --disable-pip-version-check --root-user-action=ignore /tmp/wheels/upwatch-*.whl \
    && rm -rf /tmp/wheels
ENV PATH=/opt/upwatch/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    UPWATCH_DATA_DIR=/data \
    UPWATCH_HOST=0.0.0.0 \
    UPWATCH_PORT=8000
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8000
# /readyz answers 200 while the database answers and every background role makes progress,
# else 503 (docs/operations.md, "Health and metrics"). It is asked on 127.0.0.1 at
# UPWATCH_PORT: with UPWATCH_HOST set to one other address, override this check.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/opt/upwatch/bin/python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('UPWATCH_PORT', '8000'), timeout=4)"]
CMD ["upwatch", "serve"]
