#!/usr/bin/env bash
# Runs every command of README.md's examples (lines "$ CMD" inside ``` blocks), in order, in one
# temporary directory laid out like the source tree (build/tools/meshplan, topologies/), so that a
# later example finds the files an earlier one wrote, as a reader following the README would.
# Each must exit 0, or 2 when the README shows its output starting "meshplan: error:" (an example
# of a refusal). An `mpirun` example is skipped when mpirun is not installed.
#
# Usage: run_readme_examples.sh MESHPLAN_BINARY SOURCE_DIR
set -u
binary=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/tools"
ln -s "$binary" "$work/build/tools/meshplan"
ln -s "$source_dir/topologies" "$work/topologies"
ln -s "$source_dir/models" "$work/models"

# One line per example: the expected exit code, a tab, the command.
examples=$(awk '
  /^```/ { in_block = !in_block; pending = ""; next }
  !in_block { next }
  pending != "" { print ($0 ~ /^meshplan: error:/ ? 2 : 0) "\t" pending; pending = "" }
  /^\$ / { pending = substr($0, 3) }
  END { if (pending != "") print 0 "\t" pending }
' "$source_dir/README.md")

count=0
failed=0
cd "$work" || exit 1
while IFS=$'\t' read -r want command; do
  [ -z "$command" ] && continue
  if [[ "$command" == mpirun* ]] && ! command -v mpirun >/dev/null 2>&1; then
    echo "skip (no mpirun): $command"
    continue
  fi
  count=$((count + 1))
  start=$(date +%s)
  timeout 600 bash -c "$command" >"$work/out.log" 2>&1 </dev/null
  got=$?
  echo "exit $got (want $want, $(( $(date +%s) - start )) s): $command"
  if [ "$got" != "$want" ]; then
    failed=$((failed + 1))
    echo "---- its output (last 20 lines):"
    tail -n 20 "$work/out.log"
    echo "----"
  fi
done <<<"$examples"

if [ "$count" -eq 0 ]; then
  echo "no examples found in $source_dir/README.md"
  exit 1
fi
echo "$count README examples run, $failed failed"
[ "$failed" -eq 0 ]
