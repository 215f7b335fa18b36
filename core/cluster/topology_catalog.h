// Shipped clusters by name: `-t dgx-h100-4node` reads dgx-h100-4node.toml from the directory of
// shipped topology files (installed with the program, or the source tree's topologies/ when the
// program runs from its build tree); anything else is a path, as before.
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan {

// Where shipped topology files may be. The directories are compiled in (core/CMakeLists.txt).
struct TopologySearch {
  std::string program;     // the running program's path
  std::string build_dir;   // the CMake build tree the program was built in
  std::string source_dir;  // the source tree's topologies/
  std::string
      install_dir;  // the configured install destination, <prefix>/share/meshplan/topologies
  std::string install_from_bin;  // that destination relative to the installed program's directory
};

// This program's search: its path (/proc/self/exe) and the compiled-in directories.
TopologySearch ProgramTopologySearch();

// The candidate directories, in order: for a program inside its build tree, the source tree's
// topologies/ first; otherwise <program dir>/<install_from_bin> (an installed copy, wherever its
// prefix is), then install_dir, then the source tree's (a program copied elsewhere).
std::vector<std::string> TopologyDirCandidates(const TopologySearch& search);

// The first candidate that is a directory. Error (kNotFound): none is, naming them.
Result<std::string> ShippedTopologyDir(const TopologySearch& search);

// True when `text` names a cluster rather than a file: no '/' and no ".toml" at the end.
bool IsTopologyName(const std::string& text);

// The names (file names without ".toml") of the *.toml files in `dir`, sorted.
std::vector<std::string> TopologyNamesIn(const std::string& dir);

// The file `name_or_path` stands for: an existing file, or a path (not IsTopologyName), as it is;
// a name as <dir>/<name>.toml in ShippedTopologyDir(search). Errors (kNotFound): a name with no
// such file, listing the shipped names ("unknown cluster 'x' (shipped: a, b, ...)"); a name when
// no shipped directory exists.
Result<std::string> ResolveTopologyPath(const std::string& name_or_path,
                                        const TopologySearch& search);

// ResolveTopologyPath with this program's search, then LoadTopologyFile.
Result<Topology> LoadTopology(const std::string& name_or_path);

// One shipped cluster.
struct ShippedTopology {
  std::string name;  // the file name without ".toml"
  std::string path;
  Topology topology;
};

// Every *.toml file in `dir`, loaded, sorted by name. Errors: a file that does not load (its
// error, naming it).
Result<std::vector<ShippedTopology>> LoadTopologiesIn(const std::string& dir);

}  // namespace meshplan
