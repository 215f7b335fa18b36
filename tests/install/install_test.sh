#!/bin/sh
# `cmake --install` into a fresh prefix, then the installed program alone: bin/meshplan runs, finds
# the shipped clusters installed beside it by name (`-t dgx-h100-4node`, `topo list` reading
# PREFIX/share/meshplan/topologies rather than the source tree), and the docs are there.
# Usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR   (CTest, tests/CMakeLists.txt)
set -u
cmake=$1
build_dir=$2
source_dir=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/meshplan_install.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "install_test: FAILED: $*"
  echo "--- stdout"; cat "$work/out" 2>/dev/null
  echo "--- stderr"; cat "$work/err" 2>/dev/null
  exit 1
}

"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/out" 2>"$work/err" || fail "cmake --install"
for f in bin/meshplan share/meshplan/topologies/dgx-h100-4node.toml share/meshplan/topologies/README.md \
         share/meshplan/models/llama-3.1-70b.json share/meshplan/models/README.md \
         share/doc/meshplan/README.md share/doc/meshplan/docs/usage.md share/doc/meshplan/docs/img/best-scheme.svg; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# Every shipped cluster file is installed.
for f in "$source_dir"/topologies/*.toml; do
  [ -e "$prefix/share/meshplan/topologies/$(basename "$f")" ] || fail "not installed: $(basename "$f")"
done
meshplan=$prefix/bin/meshplan

# Run from an empty directory, so nothing is found by accident in the working directory.
mkdir "$work/run" && cd "$work/run" || exit 1
"$meshplan" plan -t dgx-h100-4node --seq 64K --top 1 >"$work/out" 2>"$work/err" || fail "plan -t dgx-h100-4node"
grep -q "dgx-h100-4node" "$work/out" || fail "the plan does not name dgx-h100-4node"
"$meshplan" plan --model llama-3.1-70b --tp 8 --seq 1M --top 1 >"$work/out" 2>"$work/err" ||
  fail "plan --model llama-3.1-70b (a shipped model, found beside the installed clusters)"
"$meshplan" topo list >"$work/out" 2>"$work/err" || fail "topo list"
grep -q "shipped clusters in $prefix/share/meshplan/topologies " "$work/out" ||
  fail "topo list does not read the installed directory"
"$meshplan" plan -t no-such-cluster >"$work/out" 2>"$work/err"
[ $? -eq 2 ] || fail "an unknown name did not exit 2"
grep -q "unknown cluster 'no-such-cluster'.*dgx-h100-4node" "$work/err" || fail "no list of names in the error"
# Issue 32: with MPI in the build, the MPI plug-in is installed under LIBDIR/meshplan/ and the
# installed binary finds it: as a singleton MPI process (no mpirun) a 4-rank plan is refused by
# the plug-in's job ("this MPI job has 1 process"), not for want of the plug-in.
if [ -e "$build_dir/tools/libmeshplan_mpi.so" ]; then
  found=no
  for f in "$prefix"/lib*/meshplan/libmeshplan_mpi.so "$prefix"/lib/*/meshplan/libmeshplan_mpi.so; do
    [ -e "$f" ] && found=yes
  done
  [ "$found" = yes ] || fail "the MPI plug-in is not installed"
  "$meshplan" plan -t dgx-h100-4gpu --seq 256 --heads 4 --kv-heads 2 --head-dim 16 --schemes ring \
    -q --out p.toml >"$work/out" 2>"$work/err" || fail "plan -t dgx-h100-4gpu"
  timeout 60 "$meshplan" execute p.toml -q --transport mpi >"$work/out" 2>"$work/err"
  grep -q "this MPI job has 1 process" "$work/err" ||
    fail "the installed binary did not open its MPI plug-in"
fi
echo "install_test: passed"
