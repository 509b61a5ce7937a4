# The Streamlit app: reads the lake (analyst credentials), never writes.
ARG PYTHON_VERSION=3.12
FROM python:${PYTHON_VERSION}-slim

RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp fiolake \
 && mkdir -p /stack && chown fiolake:fiolake /stack
WORKDIR /opt/fiolake
# The build context is the repository (see .dockerignore for what stays out).
COPY . .
RUN pip install --no-cache-dir ".[app]"
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 FIOLAKE_PROFILES_DIR=/opt/fiolake/job_files
USER 10001:10001
EXPOSE 8501
# `fiolake app` binds 127.0.0.1 (right on a workstation); a container must listen on all
# interfaces, so run Streamlit directly on the installed sources.
ENTRYPOINT ["/opt/fiolake/infra/with-env.sh", "python", "-m", "streamlit", "run", "/opt/fiolake/app/Home.py", \
            "--server.address", "0.0.0.0", "--server.port", "8501", \
            "--server.headless", "true", "--browser.gatherUsageStats", "false"]
