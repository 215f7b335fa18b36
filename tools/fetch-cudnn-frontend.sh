#!/usr/bin/env bash
# Puts the cuDNN frontend's headers (header-only C++ API over cuDNN's backend) into
# .deps/cudnn-frontend/include, from the pinned PyPI wheel nvidia-cudnn-frontend, when the CUDA
# toolkit here has cuDNN (cudnn.h) and the headers are not there yet. Only the headers are used:
# the wheel's Python module is not installed. Exit 0 when nothing is needed or all went well.
set -euo pipefail
cd "$(dirname "$0")/.."
version="1.32.0"
dest=".deps/cudnn-frontend"
cuda_include="${CUDA_HOME:-/usr/local/cuda}/include"
if [ ! -f "$cuda_include/cudnn.h" ]; then
  exit 0  # no cuDNN in the toolkit: nothing to build against
fi
if [ -f "$dest/include/cudnn_frontend.h" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-pip >/dev/null
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The headers are the same in every wheel of a version: take one fixed platform's, whatever the
# local Python is.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_28_x86_64 -d "$tmp" "nvidia-cudnn-frontend==$version"
python3 -m zipfile -e "$tmp"/nvidia_cudnn_frontend-*.whl "$tmp/wheel"
[ -f "$tmp/wheel/include/cudnn_frontend.h" ] || { echo "fetch-cudnn-frontend: no include/ in the wheel" >&2; exit 1; }
rm -rf "$dest.new"; mkdir -p "$dest.new"
cp -r "$tmp/wheel/include" "$dest.new/"
echo "$version" > "$dest.new/VERSION"
rm -rf "$dest"; mv "$dest.new" "$dest"
echo "meshplan setup: cuDNN frontend $version headers in $dest" >&2
