#!/bin/sh
# A mask kind the rule does not handle cannot be costed silently (issue 45): a scratch copy of
# core/sequence/mask_rule.h with one more MaskKind (kFake, the last) must make the planner's pair
# counts (planner/compute_model.cc, which takes every visible-key range from the rule's
# VisibleKeys) fail to compile under the project's -Werror=switch, naming the kind; the same command over an
# unchanged copy must compile, so that the failure is the fake kind's and nothing else's.
# Usage: sh unhandled_mask_kind.sh CXX SOURCE_DIR [INCLUDE_DIR...]
set -u
cxx=$1; src=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
includes=""
for dir in "$@"; do includes="$includes -isystem $dir"; done

compile() {  # SCRATCH_DIR: compute_model.cc with SCRATCH_DIR/core/sequence/mask_rule.h in front
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 -fsyntax-only -Wall -Werror=switch -I "$1" -I "$src" $includes \
    "$src/planner/compute_model.cc" 2>&1
}

rule=core/sequence/mask_rule.h
# The scratch copies must exist: a failed copy would compile the real rule twice and pass nothing.
mkdir -p "$work/same/$(dirname $rule)" "$work/fake/$(dirname $rule)" &&
  cp "$src/$rule" "$work/same/$rule" &&
  sed 's/kDocumentsFull, kPrefix };/kDocumentsFull, kPrefix, kFake };/' "$src/$rule" \
    > "$work/fake/$rule" || {
  echo "unhandled_mask_kind: cannot make the scratch copies of $src/$rule" >&2
  exit 1
}
if cmp -s "$work/same/$rule" "$work/fake/$rule"; then
  echo "unhandled_mask_kind: the MaskKind enum in $rule changed shape; update the sed" >&2
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
