# The Streamlit app: reads the lake (analyst credentials), never writes.
# Lines up to ENV are the same in Dockerfile.runner/.app/.openbao: the builds share them.
# BASE: `make images` passes the Debian base it built with mmdebstrap (no registry); with a
# registry, the default works: `docker build -f infra/Dockerfile.X .` after `make wheels`.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
# The mmdebstrap base already holds these packages (apt-get is skipped); on
# debian:bookworm-slim they come from the Debian mirror.
RUN set -eu; missing=""; \
    for deb in passwd fio python3 python3-venv ca-certificates curl; do \
      dpkg -s "$deb" >/dev/null 2>&1 || missing="$missing $deb"; \
    done; \
    if [ -n "$missing" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $missing \
      && rm -rf /var/lib/apt/lists/*; \
    fi; \
    fio --version; \
    useradd --uid 10001 --user-group --no-create-home --home-dir /tmp fiolake; \
    mkdir -p /stack /bench /bao/data /data; \
    chown 10001:10001 /stack /bench /bao/data /data
# Dependencies first (the layer stays cached until pyproject.toml changes), then fiolake.
# The wheels are bind-mounted, not copied: a COPY layer would keep them in the image.
# A bind mount's content is not part of the build cache's key (podman 4.3, BuildKit):
# `make images` passes the wheels' hashes, so a changed wheel rebuilds its layer.
ARG DEPS_WHEELS_SHA=unset
RUN --mount=type=bind,source=build/wheels/deps,target=/opt/fiolake/wheels \
    echo "dependency wheels $DEPS_WHEELS_SHA" \
 && python3 -m venv /opt/fiolake/venv \
 && /opt/fiolake/venv/bin/pip install --no-cache-dir --no-index /opt/fiolake/wheels/*.whl
ARG FIOLAKE_WHEEL_SHA=unset
RUN --mount=type=bind,source=build/wheels/fiolake,target=/opt/fiolake/wheel \
    echo "fiolake wheel $FIOLAKE_WHEEL_SHA" \
 && /opt/fiolake/venv/bin/pip install --no-cache-dir --no-index --no-deps /opt/fiolake/wheel/*.whl
COPY infra/with-env.sh /usr/local/bin/with-env.sh
# Read-only root friendly: HOME (keyring cache, spool default) is a tmpfs at /tmp.
ENV PATH=/opt/fiolake/venv/bin:/usr/local/bin:/usr/bin:/bin HOME=/tmp PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
EXPOSE 8501
# `fiolake app` binds 127.0.0.1 by default; compose passes --address/--port (host network).
ENTRYPOINT ["/usr/local/bin/with-env.sh", "fiolake", "app"]
CMD ["--address", "0.0.0.0", "--port", "8501"]
