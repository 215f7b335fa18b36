#!/usr/bin/env bash
# Checks that every C++ and CUDA source is formatted as .clang-format says, with the clang-format
# that tools/setup.sh installs (clang-format-14, Debian's; another version formats differently).
# Usage: bash tools/check-format.sh [--fix]
# Exit: 0 formatted (or fixed with --fix); 1 a file differs (clang-format names it and the line);
# 77 clang-format-14 is not installed (the test suite reports a skip; CI, whose setup installs it,
# fails).
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=clang-format-14
if ! command -v "$formatter" >/dev/null 2>&1; then
  echo "check-format: $formatter is not installed (bash tools/setup.sh installs it)" >&2
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh')
else
  mapfile -t files < <(find core planner simulator executor capacity report tools tests bench \
                         \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  "$formatter" -i "${files[@]}"
  exit 0
fi
if ! "$formatter" --dry-run -Werror "${files[@]}"; then
  echo "check-format: the files above differ from $formatter's output (fix: bash tools/check-format.sh --fix)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
