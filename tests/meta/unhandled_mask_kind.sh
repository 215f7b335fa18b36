#!/bin/sh
# A mask kind the rule does not handle cannot be costed silently (issue 45): a scratch copy of
# core/mask_rule.h with one more MaskKind (kFake, the last) must make the planner's pair counts
# (planner/compute_model.cc, which takes every visible-key range from the rule's VisibleKeys)
# fail to compile under the project's -Werror=switch, naming the kind; the same command over an
# unchanged copy must compile, so that the failure is the fake kind's and nothing else's.
# Usage: sh unhandled_mask_kind.sh CXX SOURCE_DIR [INCLUDE_DIR...]
set -u
cxx=$1; src=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
includes=""
for dir in "$@"; do includes="$includes -isystem $dir"; done

compile() {  # SCRATCH_DIR: compute_model.cc with SCRATCH_DIR/core/mask_rule.h in front
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 -fsyntax-only -Wall -Werror=switch -I "$1" -I "$src" $includes \
    "$src/planner/compute_model.cc" 2>&1
}

mkdir -p "$work/same/core" "$work/fake/core"
cp "$src/core/mask_rule.h" "$work/same/core/mask_rule.h"
sed 's/kDocumentsFull, kPrefix };/kDocumentsFull, kPrefix, kFake };/' "$src/core/mask_rule.h" \
  > "$work/fake/core/mask_rule.h"
if cmp -s "$work/same/core/mask_rule.h" "$work/fake/core/mask_rule.h"; then
  echo "unhandled_mask_kind: the MaskKind enum in core/mask_rule.h changed shape; update the sed" >&2
  exit 1
fi
if ! out=$(compile "$work/same"); then
  echo "unhandled_mask_kind: compute_model.cc does not compile over an unchanged copy:" >&2
  echo "$out" >&2
  exit 1
fi
if out=$(compile "$work/fake"); then
  echo "unhandled_mask_kind: a mask kind nobody handles compiled into the planner's costs" >&2
  exit 1
fi
if ! echo "$out" | grep -q "kFake"; then
  echo "unhandled_mask_kind: the build failed, but not on the unhandled kind:" >&2
  echo "$out" | head -20 >&2
  exit 1
fi
echo "unhandled_mask_kind: an unhandled MaskKind fails to compile the planner's pair counts:"
echo "$out" | grep "kFake" | head -3
