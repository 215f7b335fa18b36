// Every mask kind on a sequence of 6 tokens, its visible pairs written out by hand from the
// definitions in core/sequence/mask.h (not computed): the independent answer that
// core/sequence/mask_rule.h's rule, core/sequence/mask.cc's pair counts and the executor's kernels
// and reference are checked against (tests/core/sequence/mask_rule_test.cc,
// tests/executor/kernels/mask_agreement_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sequence/mask.h"

namespace meshplan::mask_grids {

inline constexpr int64_t kGridTokens = 6;

struct MaskGrid {
  std::string name;
  Mask mask;
  // rows[q][k] == 'x' when query q sees key k, '.' when it does not.
  std::vector<std::string> rows;

  bool Sees(int64_t q, int64_t k) const {
    return rows[static_cast<size_t>(q)][static_cast<size_t>(k)] == 'x';
  }
};

// One grid per MaskKind at least (tests check that each kind has one), plus edge parameters.
// Documents [2, 3, 1] are tokens {0, 1}, {2, 3, 4} and {5}.
inline std::vector<MaskGrid> HandWrittenGrids() {
  // One grid row per line, as the grids are read:
  // clang-format off
  return {
      {"full", Mask::Full(),
       {"xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx"}},
      {"causal", Mask::Causal(),  // k <= q
       {"x.....",
        "xx....",
        "xxx...",
        "xxxx..",
        "xxxxx.",
        "xxxxxx"}},
      {"window:2", Mask::Window(2),  // q - 2 < k <= q: the key itself and the one before
       {"x.....",
        "xx....",
        ".xx...",
        "..xx..",
        "...xx.",
        "....xx"}},
      {"window:1", Mask::Window(1),  // only the token itself
       {"x.....",
        ".x....",
        "..x...",
        "...x..",
        "....x.",
        ".....x"}},
      {"window:9", Mask::Window(9),  // longer than the sequence: causal
       {"x.....",
        "xx....",
        "xxx...",
        "xxxx..",
        "xxxxx.",
        "xxxxxx"}},
      {"docs:2,3,1", Mask::Documents({2, 3, 1}),  // causal inside each document
       {"x.....",
        "xx....",
        "..x...",
        "..xx..",
        "..xxx.",
        ".....x"}},
      {"docs-full:2,3,1", Mask::Documents({2, 3, 1}, true),  // the whole document, both ways
       {"xx....",
        "xx....",
        "..xxx.",
        "..xxx.",
        "..xxx.",
        ".....x"}},
      {"docs-full:1,1,1,1,1,1", Mask::Documents({1, 1, 1, 1, 1, 1}, true),  // only itself
       {"x.....",
        ".x....",
        "..x...",
        "...x..",
        "....x.",
        ".....x"}},
      {"prefix:3", Mask::Prefix(3),  // tokens 0-2 see each other; later ones see all before them
       {"xxx...",
        "xxx...",
        "xxx...",
        "xxxx..",
        "xxxxx.",
        "xxxxxx"}},
      {"prefix:1", Mask::Prefix(1),  // a prefix of one token: causal
       {"x.....",
        "xx....",
        "xxx...",
        "xxxx..",
        "xxxxx.",
        "xxxxxx"}},
      {"prefix:6", Mask::Prefix(6),  // the whole sequence is the prefix: full
       {"xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx",
        "xxxxxx"}},
  };
  // clang-format on
}

}  // namespace meshplan::mask_grids
