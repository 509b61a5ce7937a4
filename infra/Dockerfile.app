# The Streamlit app: reads the lake (analyst credentials), never writes.
ARG PYTHON_VERSION=3.12
FROM python:${PYTHON_VERSION}-slim

RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp fiolake \
 && mkdir -p /stack && chown fiolake:fiolake /stack
WORKDIR /opt/fiolake
# The build context is the repository (see .dockerignore for what stays out).
COPY . .
RUN pip install --no-cache-dir ".[app]"
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
EXPOSE 8501
# `fiolake app` binds 127.0.0.1 by default (right on a workstation); a container must
# listen on all interfaces.
ENTRYPOINT ["/opt/fiolake/infra/with-env.sh", "fiolake", "app", "--address", "0.0.0.0", "--port", "8501"]
