#!/bin/bash
# `make images`: build every image compose.yaml and infra/k8s/ use, with podman and no
# registry. Cached steps: the Debian base (mmdebstrap tarball under $CACHE/images, imported
# once), the dependency wheels (rebuilt when pyproject.toml changes), podman's layer cache.
#
# Environment: CACHE (default ~/.cache/fiolake), PY (the venv's python, for `pip wheel`),
# DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (http://deb.debian.org/debian), IMAGES (names).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
CACHE=${CACHE:-$HOME/.cache/fiolake}
PY=${PY:-$root/.venv/bin/python}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What every image needs from Debian; the Dockerfiles apt-get the same list on other bases.
BASE_DEBS=passwd,fio,python3,python3-venv,ca-certificates,curl
IMAGES=${IMAGES:-runner app openbao minio}

export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/build/containers.conf}
bash infra/containers/containers-conf.sh "$CONTAINERS_CONF"

stamp() { date +%s; }
t0=$(stamp)
# 1. The base: Debian packages only, keyed by suite + package list.
key=$(printf '%s %s' "$SUITE" "$BASE_DEBS" | sha256sum | cut -c1-12)
base=localhost/fiolake-base:$SUITE-$key
tarball=$CACHE/images/fiolake-base-$SUITE-$key.tar
if [ -n "$IMAGES" ] && ! podman image exists "$base"; then
  if [ ! -s "$tarball" ]; then
    echo "images: mmdebstrap $SUITE ($BASE_DEBS) -> $tarball" >&2
    mkdir -p "$(dirname "$tarball")"
    mmdebstrap --quiet --format=tar --variant=minbase --include="$BASE_DEBS" \
      --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
      "$SUITE" "$tarball.tmp" "$MIRROR"
    mv "$tarball.tmp" "$tarball"
  fi
  podman import --quiet "$tarball" "$base" >/dev/null
fi
t_base=$(stamp)

# 2. Wheels: dependencies (only when pyproject.toml changes) and fiolake itself (always).
wheels=build/wheels
if [ ! -e "$wheels/deps.stamp" ] || [ pyproject.toml -nt "$wheels/deps.stamp" ]; then
  rm -rf "$wheels/deps" && mkdir -p "$wheels/deps"
  "$PY" -m pip wheel --quiet --wheel-dir "$wheels/deps" ".[stack,app]" 2>"$wheels/pip.log" \
    || { cat "$wheels/pip.log" >&2; exit 1; }
  rm -f "$wheels"/deps/fiolake-*.whl
  touch "$wheels/deps.stamp"
fi
rm -rf "$wheels/fiolake" && mkdir -p "$wheels/fiolake"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$wheels/fiolake" . 2>"$wheels/pip.log" \
  || { cat "$wheels/pip.log" >&2; exit 1; }

# 3. MinIO: the binary the project builds from its pinned Go module (cached).
minio=$("$PY" -c 'from fiolake.stack.minio import ensure_minio; print(ensure_minio())')
mkdir -p build/bin
cmp -s "$minio" build/bin/minio || cp "$minio" build/bin/minio
t_prep=$(stamp)

# 4. The images (the python ones share every layer up to their last lines). The wheels are
# bind-mounted, and a mount's content is not in the layer cache's key: their hashes are.
deps_sha=$(ls "$wheels/deps" | sha256sum | cut -c1-16)
wheel_sha=$(cat "$wheels"/fiolake/*.whl | sha256sum | cut -c1-16)
for name in $IMAGES; do
  podman build --quiet --network host --build-arg BASE="$base" \
    --build-arg DEPS_WHEELS_SHA="$deps_sha" --build-arg FIOLAKE_WHEEL_SHA="$wheel_sha" \
    -f "infra/Dockerfile.$name" -t "fiolake-$name:local" . >/dev/null
done
t_end=$(stamp)
echo "images: base $((t_base - t0)) s, wheels+minio $((t_prep - t_base)) s," \
  "builds $((t_end - t_prep)) s ($IMAGES)" >&2
