#!/bin/sh
# The README checker compares execute's deterministic numbers (issue 48): a README whose execute
# example shows the memory estimate the command prints passes; the same README with that estimate
# changed by one digit fails.
#   checker_sees_memory_test.sh MESHPLAN_BINARY SOURCE_DIR
set -eu
binary=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
plan_cmd="build/tools/meshplan plan -t dgx-h100-4gpu --seq 4K --heads 4 --kv-heads 2 --head-dim 16 --schemes ring -q --out p.toml"
exec_cmd="build/tools/meshplan execute p.toml --check --max-memory 1K"
mkdir -p build/tools
ln -s "$binary" build/tools/meshplan
ln -s "$source/topologies" topologies
ln -s "$source/models" models
sh -c "$plan_cmd"
refusal=$(sh -c "$exec_cmd" 2>&1 || true)
case "$refusal" in
  "meshplan: error: p.toml: execute: this run needs about "*) ;;
  *) echo "unexpected refusal: $refusal"; exit 1 ;;
esac
# The first digit of the estimate, one up (9 wraps to 1, which still changes it).
changed=$(printf '%s' "$refusal" | sed -E 's/needs about ([0-9])/needs about X\1/; s/X9/1/; s/X8/9/; s/X7/8/; s/X6/7/; s/X5/6/; s/X4/5/; s/X3/4/; s/X2/3/; s/X1/2/; s/X0/1/')
[ "$changed" != "$refusal" ] || { echo "could not change the estimate"; exit 1; }
readme() {
  printf '```\n$ %s\n$ %s\n%s\n```\n' "$plan_cmd" "$exec_cmd" "$1" > "$2"
}
readme "$refusal" good.md
readme "$changed" bad.md
python3 "$source/tests/readme/check_readme_examples.py" "$binary" "$source" "$work/good.md" > good.log ||
  { echo "the checker refused the README showing what execute printed:"; cat good.log; exit 1; }
if python3 "$source/tests/readme/check_readme_examples.py" "$binary" "$source" "$work/bad.md" > bad.log; then
  echo "the checker passed a README showing a changed memory estimate:"
  cat bad.log
  exit 1
fi
grep -q "shown but not printed" bad.log || { cat bad.log; exit 1; }
echo "ok: the checker compares execute's memory estimate"
