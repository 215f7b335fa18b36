#!/usr/bin/env bash
# Every CTest name is at most 72 characters, so that ctest's progress lines fit 120 columns.
# Usage: bash tests/meta/ctest_names_fit.sh BUILD_DIR
# Exit: 0 every name of `ctest --test-dir BUILD_DIR -N` fits (it prints the count and the longest);
# 1 a name is longer (each is named, with its length), or the listing failed or found no test.
#
# Why 72: ctest pads every name with dots to the longest name of the run plus 4 (a space and at
# least 3 dots), so the longest name sets the width of every line. With 1000 to 9999 tests:
#   "1075/1075 Test #1075: "  22 characters (counter and number, padded to the total's width)
#   NAME + " ..."             72 + 4
#   "   Passed    0.01 sec"   21 (status and time; "***Failed" is as wide)
# 22 + 76 + 21 = 119 columns, within 120. A gtest test's name is
# `Instantiation/Suite.Test/param` when parameterised and `Suite.Test` otherwise: shorten the test
# name, the suite, the instantiation prefix or the param name generator, keeping it a sentence.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: bash $0 BUILD_DIR" >&2
  exit 1
fi
limit=72
listing=$(ctest --test-dir "$1" -N)
# Lines of the listing: "  Test  #12: Suite.Name" (the number padded to the total's width).
names=$(printf '%s\n' "$listing" | sed -n 's/^ *Test *#[0-9]*: //p')
if [ -z "$names" ]; then
  echo "ctest_names_fit: ctest --test-dir $1 -N lists no test" >&2
  exit 1
fi
long=$(printf '%s\n' "$names" | awk -v limit="$limit" 'length($0) > limit { print length($0), $0 }')
if [ -n "$long" ]; then
  printf '%s\n' "$long" | while read -r length name; do
    echo "ctest_names_fit: $name: $length characters, more than $limit" >&2
  done
  echo "ctest_names_fit: shorten these names (tests/meta/ctest_names_fit.sh says why $limit)" >&2
  exit 1
fi
count=$(printf '%s\n' "$names" | wc -l)
longest=$(printf '%s\n' "$names" |
  awk 'length($0) > max { max = length($0); name = $0 } END { print max, name }')
echo "ctest_names_fit: $count names, all at most $limit characters (longest: ${longest#* }," \
  "${longest%% *})"
