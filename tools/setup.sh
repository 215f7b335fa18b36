#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds the meshplan command (its libraries, the CUDA
# kernels where the toolkit is present, the MPI plug-in) and runs `meshplan plan` on the built-in
# default cluster and workload. The tests and benchmarks build in tools/test.sh, so the first plan
# comes after the command's own build only (docs/usage.md gives both times). A compiler cache
# (ccache) is used where one is installed. Usage: bash tools/setup.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"

packages=(cmake g++ make libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libeigen3-dev libgtest-dev libbenchmark-dev
          libopenmpi-dev openmpi-bin clang-format-14 python3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "meshplan setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# With the CUDA toolkit's cuDNN present, the cuDNN path of the GPU executor needs the cuDNN
# frontend's C++ headers (header-only; no Debian package): taken, pinned, from the PyPI wheel
# nvidia-cudnn-frontend into .deps/ (docs/gpu-executor.md says why). Without them, or without
# cuDNN, the build leaves that path out and the GPU executor uses its own kernels.
bash tools/fetch-cudnn-frontend.sh || echo "meshplan setup: building without the cuDNN path" >&2

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target meshplan
echo
"$build_dir/tools/meshplan" plan
echo
echo "meshplan setup: the command is built; bash tools/test.sh builds the tests and benchmarks and runs them"
