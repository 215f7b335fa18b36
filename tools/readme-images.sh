#!/bin/sh
# The README's images (docs/img/*.svg), drawn by the program from the README's own commands:
#   bash tools/readme-images.sh [MESHPLAN]          regenerates them into docs/img/
#   bash tools/readme-images.sh --check [MESHPLAN]  exits 1, naming each, when a copy in docs/img/
#                                                   differs from what the program draws now
# (CTest readme_images runs --check, so a change to a chart or to the model that moves them fails
# until they are regenerated). MESHPLAN defaults to build/tools/meshplan.
set -eu
mode=write
if [ "${1:-}" = "--check" ]; then
  mode=check
  shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
meshplan=${1:-$root/build/tools/meshplan}
case $meshplan in /*) ;; *) meshplan=$(pwd)/$meshplan ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/meshplan_readme_images.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
# The README's sweep example (Capacity planning) and its timeline's plan (simulate example).
"$meshplan" sweep --gpus 8..1024 --seq 32K..2M -q -o sweep.csv --plot charts
"$meshplan" plan --seq 256K -t "$root/topologies/dgx-h100-4node.toml" -q --out plan.toml >/dev/null 2>&1
"$meshplan" simulate plan.toml -q --timeline charts/timeline.svg >/dev/null 2>&1
status=0
for name in time-vs-gpus best-scheme comm-share-vs-seq timeline; do
  drawn=charts/$name.svg
  copy=$root/docs/img/$name.svg
  if [ "$mode" = write ]; then
    cp "$drawn" "$copy"
  elif ! cmp -s "$drawn" "$copy"; then
    echo "readme-images: docs/img/$name.svg differs from what meshplan draws now" \
      "(bash tools/readme-images.sh regenerates it)"
    status=1
  fi
done
[ "$mode" = write ] && echo "readme-images: wrote docs/img/{time-vs-gpus,best-scheme,comm-share-vs-seq,timeline}.svg"
exit $status
