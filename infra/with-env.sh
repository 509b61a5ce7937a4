#!/bin/sh
# Container entry point: load the role environment that `fiolake stack init-remote`
# wrote (FIOLAKE_ENV_FILE, lines of `export NAME=value`), then run the command.
set -eu
if [ -n "${FIOLAKE_ENV_FILE:-}" ]; then
  waited=0
  while [ ! -s "$FIOLAKE_ENV_FILE" ]; do  # the init job may still be running
    if [ "$waited" -ge "${FIOLAKE_ENV_WAIT:-300}" ]; then
      echo "with-env: $FIOLAKE_ENV_FILE missing after ${waited} s: did the init job succeed?" >&2
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  set -a
  . "$FIOLAKE_ENV_FILE"
  set +a
fi
exec "$@"
