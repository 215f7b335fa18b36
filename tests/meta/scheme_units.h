// A checker for "a scheme is one unit": outside its own file (planner/schemes/<name>.cc, '-' as
// '_') and the registry (planner/schemes/registry.{h,cc}), no source file of the program names a
// scheme, so that adding, renaming or removing one touches its file, one registry line and tests.
// tests/meta/scheme_units_test.cc runs it on the real tree with the binary's own list of schemes
// (`meshplan plan --list-schemes`) and on fake trees to show that each rule can fail.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace meshplan::scheme_units {

struct Options {
  std::vector<std::string> schemes;  // every registered scheme name
  // Names that are also ordinary words of the domain (a ring pass, the mesh tile family, the
  // Ulysses all-to-all): only their use as a string literal is a scheme name ("mesh").
  std::vector<std::string> common_words;
  // Names that are also plan-file parameter keys (the ring and Ulysses degrees): their string
  // literals are keys, so they are not checked at all as literals.
  std::vector<std::string> parameter_keys;
};

// Checks the program's source files under root (core, planner, simulator, executor, report,
// capacity, tools: .h .cc .cu .cuh .in .sh .py and CMakeLists.txt; tests/, docs/ and bench/ are
// free to name schemes):
//  1. a scheme name that is not a common word appears nowhere outside its unit and the registry,
//     in code or comment, case-insensitive, as a word of its own or a CamelCase part ('-' may be
//     written '_' or left out: "mesh-ulysses", "Mesh_Ulysses", "NewMeshUlyssesStrategy"); the unit
//     of a scheme whose name extends it
//     ("attention2d-o" for "attention2d") may name it;
//  2. a common-word name that is not a parameter key appears nowhere as a string literal ("mesh")
//     outside its unit and the registry;
//  3. no line outside the scheme units and the registry names three or more schemes, as their
//     exact lower-case words (a copy of the list);
//  4. planner/plan_file.h (the plan-file reader) is included only by tools/ and its own .cc.
// Returns one line per violation: "FILE:LINE: what".
std::vector<std::string> CheckSchemeUnits(const std::filesystem::path& root,
                                          const Options& options);

}  // namespace meshplan::scheme_units
