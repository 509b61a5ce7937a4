#!/bin/sh
# The runner image's entry point: with-env.sh loads the role environment, then
# `fiolake runner` starts under a name of its own.
#
# Replicas on host networking share the host's name and are each PID 1 in their
# container, so the default HOST:PID would repeat. The name is FIOLAKE_RUNNER_ID, else
# HOST-<container id> (stable across restarts of one container: it finds its own spool
# again), else HOST-<random>. A `{runner}` in an argument becomes that name, so replicas
# that share one volume keep their target and spool apart (podman-compose gives all
# replicas of a service the same anonymous volume). A later `--runner-id` wins (k8s).
set -eu
id=${FIOLAKE_RUNNER_ID:-}
if [ -z "$id" ]; then
  cid=$(sed -n 's/.*libpod-\([0-9a-f]\{12\}\).*/\1/p; s/.*docker[-/]\([0-9a-f]\{12\}\).*/\1/p' \
    /proc/self/cgroup 2>/dev/null | head -n 1)
  id="$(hostname)-${cid:-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')}"
fi
for arg do
  shift
  set -- "$@" "$(printf '%s' "$arg" | sed "s/{runner}/$id/g")"
done
exec /usr/local/bin/with-env.sh fiolake runner --runner-id "$id" "$@"
