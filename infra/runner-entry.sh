#!/bin/sh
# The runner image's entry point: with-env.sh loads the role environment, then the runner
# starts under a name of its own. Replicas on host networking share the host's name and
# are each PID 1 in their container, so the default HOST:PID would repeat; a random suffix
# per start keeps runs.runner apart. `--runner-id` in the arguments (k8s: the node name)
# comes later and wins.
set -eu
suffix=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
exec /usr/local/bin/with-env.sh fiolake runner --runner-id "${FIOLAKE_RUNNER_ID:-$(hostname)-$suffix}" "$@"
