# The Streamlit app: reads the lake (analyst credentials), never writes. The runner's layers
# and the analysis and app extras (DuckDB, delta-rs, SciPy, Streamlit, Altair) on top.
# Lines up to the runner wheels' RUN are the same in Dockerfile.runner/.init/.app: the
# builds share them.
# BASE: `make images` passes the Debian base it built with mmdebstrap (no registry); with a
# registry, the default works: `docker build -f infra/Dockerfile.X .` after `make wheels`.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
# The mmdebstrap base already holds these packages (apt-get is skipped); on
# debian:bookworm-slim they come from the Debian mirror.
RUN set -eu; missing=""; \
    for deb in passwd fio python3 python3-venv ca-certificates; do \
      dpkg -s "$deb" >/dev/null 2>&1 || missing="$missing $deb"; \
    done; \
    if [ -n "$missing" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $missing \
      && rm -rf /var/lib/apt/lists/*; \
    fi; \
    fio --version; \
    useradd --uid 10001 --user-group --no-create-home --home-dir /tmp fiolake; \
    mkdir -p /stack /bench /data; \
    chown 10001:10001 /stack /bench /data
# Dependencies first (the layers stay cached until pyproject.toml changes), then fiolake.
# The wheels are bind-mounted, not copied: a COPY layer would keep them in the image.
# A bind mount's content is not part of the build cache's key (podman 4.3, BuildKit):
# `make images` passes the wheels' hashes, so a changed wheel rebuilds its layer.
# pip runs from Debian's wheel of it (python3-venv) and is not installed: no installer in
# the images. First `pip install fiolake`'s dependencies (no extras), less the parts of
# pyarrow fiolake never loads: Flight, its S3 file system (the lake goes through boto3 and
# DuckDB), its tests and C++ headers and sources (~70 MB).
ARG RUNNER_WHEELS_SHA=unset
RUN --mount=type=bind,source=build/wheels/runner,target=/opt/fiolake/wheels \
    echo "runner wheels $RUNNER_WHEELS_SHA" \
 && python3 -m venv --without-pip /opt/fiolake/venv \
 && /opt/fiolake/venv/bin/python "$(echo /usr/share/python-wheels/pip-*.whl)/pip" install \
      --no-cache-dir --no-index --disable-pip-version-check --root-user-action=ignore \
      /opt/fiolake/wheels/*.whl \
 && cd /opt/fiolake/venv/lib/python3*/site-packages/pyarrow \
 && rm -rf tests include src _pyarrow_cpp_tests.* ./*flight* _s3fs.* libarrow_s3.*
# What fiolake[app] adds to the runner's dependencies.
ARG APP_WHEELS_SHA=unset
RUN --mount=type=bind,source=build/wheels/app,target=/opt/fiolake/wheels \
    echo "app wheels $APP_WHEELS_SHA" \
 && /opt/fiolake/venv/bin/python "$(echo /usr/share/python-wheels/pip-*.whl)/pip" install \
      --no-cache-dir --no-index --disable-pip-version-check --root-user-action=ignore \
      /opt/fiolake/wheels/*.whl
ARG FIOLAKE_WHEEL_SHA=unset
RUN --mount=type=bind,source=build/wheels/fiolake,target=/opt/fiolake/wheel \
    echo "fiolake wheel $FIOLAKE_WHEEL_SHA" \
 && /opt/fiolake/venv/bin/python "$(echo /usr/share/python-wheels/pip-*.whl)/pip" install \
      --no-cache-dir --no-index --disable-pip-version-check --root-user-action=ignore \
      --no-deps /opt/fiolake/wheel/*.whl
COPY infra/with-env.sh /usr/local/bin/with-env.sh
# Read-only root friendly: HOME (keyring cache, spool default) is a tmpfs at /tmp.
ENV PATH=/opt/fiolake/venv/bin:/usr/local/bin:/usr/bin:/bin HOME=/tmp PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
EXPOSE 8501
# `fiolake app` binds 127.0.0.1 by default; compose passes --address/--port (host network).
# The default CMD (every interface) needs a login: without FIOLAKE_APP_AUTH naming a login
# file (infra/k8s/app.yaml mounts one from a Secret) it refuses to start (exit 2), so the
# image never serves the lake openly by accident. --insecure-no-login only behind a proxy
# that signs people in (docs/deploy.md "Sharing the app").
ENTRYPOINT ["/usr/local/bin/with-env.sh", "fiolake", "app"]
CMD ["--address", "0.0.0.0", "--port", "8501"]
