// A checker for the layering of a source tree: which part of the tree may include which, and
// whether each part's CMakeLists links the meshplan_* libraries its includes call for. The rules
// the real tree obeys are in tests/meta/layering_rules.h; this file only knows how to check them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace meshplan::layering {

// A top-level directory that builds one or more meshplan_* libraries (or the CLI).
struct Part {
  std::string name;  // the directory, e.g. "planner"; subdirectories belong to it
  std::vector<std::string> may_include;  // the parts below it, whose headers its files may include
};

// A folder of a part with a rule of its own (e.g. "executor/transport"): its files may include,
// of their own part, only headers in the folder itself (and below it) or in the entries of
// may_include. An entry naming the part itself ("executor") stands for the files directly in the
// part's top directory; any other entry covers its subfolders too. The part's top-level files
// include within the part freely.
struct Folder {
  std::string path;                      // relative to the root
  std::vector<std::string> may_include;  // folders of the same part, or the part itself
};

struct Rules {
  std::vector<Part> parts;
  std::vector<std::string>
      free_dirs;                // top-level directories that may include anything (tests/, bench/)
  std::vector<Folder> folders;  // inside parts; a part with any has one for each subfolder
};

struct Report {
  std::vector<std::string> violations;  // one line each, naming the file (and line) at fault
  std::string includes;  // per part: the parts it includes, each with a file that does
};

// Checks the tree at `root` against `rules`:
//  1. every quoted include "P/..." in a file (.h .cc .cu .cuh) of part A names a part P that is A
//     itself or in A's may_include; including a free directory (tests/, bench/) is a violation too;
//  2. every meshplan_* library that a CMakeLists.txt of part A links belongs to A or to a part
//     whose headers some file of A includes ("links only what it includes");
//  3. every part whose headers A includes is reachable from A through the links of the parts'
//     CMakeLists, directly or through other parts ("links what it needs": CMake passes PUBLIC
//     links on), and every linked meshplan_* library is defined by some part;
//  4. every top-level directory with C++ sources is a part or a free directory;
//  5. every file in a Folder includes, of its own part, only what the folder's rule allows, and in
//     a part with folder rules every direct subdirectory with C++ sources has one.
// Files in messages are relative to root.
Report CheckLayering(const std::filesystem::path& root, const Rules& rules);

}  // namespace meshplan::layering
