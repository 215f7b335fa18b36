#include "core/cluster/topology_catalog.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/base/did_you_mean.h"
#include "core/cluster/topology_toml.h"

// Compiled in by core/CMakeLists.txt for this file only; empty when built some other way.
#ifndef MESHPLAN_BUILD_DIR
#define MESHPLAN_BUILD_DIR ""
#endif
#ifndef MESHPLAN_SOURCE_TOPOLOGY_DIR
#define MESHPLAN_SOURCE_TOPOLOGY_DIR ""
#endif
#ifndef MESHPLAN_INSTALL_TOPOLOGY_DIR
#define MESHPLAN_INSTALL_TOPOLOGY_DIR ""
#endif
#ifndef MESHPLAN_TOPOLOGY_DIR_FROM_BIN
#define MESHPLAN_TOPOLOGY_DIR_FROM_BIN ""
#endif

namespace meshplan {
namespace {

namespace fs = std::filesystem;

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_directory(path, ec);
}

// True when `path` lies inside directory `dir` (both made absolute and normal, links kept).
bool Inside(const std::string& path, const std::string& dir) {
  if (path.empty() || dir.empty()) return false;
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  const fs::path d = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  const auto [d_end, p_at] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
  return d_end == d.end();
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

TopologySearch ProgramTopologySearch() {
  TopologySearch search;
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) search.program = program.string();
  search.build_dir = MESHPLAN_BUILD_DIR;
  search.source_dir = MESHPLAN_SOURCE_TOPOLOGY_DIR;
  search.install_dir = MESHPLAN_INSTALL_TOPOLOGY_DIR;
  search.install_from_bin = MESHPLAN_TOPOLOGY_DIR_FROM_BIN;
  return search;
}

std::vector<std::string> TopologyDirCandidates(const TopologySearch& search) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& dir) {
    if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
  };
  if (Inside(search.program, search.build_dir)) add(search.source_dir);
  if (!search.program.empty() && !search.install_from_bin.empty()) {
    add((fs::path(search.program).parent_path() / search.install_from_bin)
            .lexically_normal()
            .string());
  }
  add(search.install_dir);
  add(search.source_dir);
  return out;
}

Result<std::string> ShippedTopologyDir(const TopologySearch& search) {
  const std::vector<std::string> candidates = TopologyDirCandidates(search);
  for (const std::string& dir : candidates) {
    if (IsDirectory(dir)) return dir;
  }
  return Status::NotFound(
      "no directory of shipped topologies (looked in: " +
      (candidates.empty() ? std::string("nothing compiled in") : JoinNames(candidates)) + ")");
}

bool IsTopologyName(const std::string& text) {
  const std::string suffix = ".toml";
  const bool toml = text.size() >= suffix.size() &&
                    text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  return !text.empty() && text.find('/') == std::string::npos && !toml;
}

std::vector<std::string> TopologyNamesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code file_ec;
    if (p.extension() == ".toml" && fs::is_regular_file(p, file_ec))
      names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> ResolveTopologyPath(const std::string& name_or_path,
                                        const TopologySearch& search) {
  std::error_code ec;
  if (!IsTopologyName(name_or_path) || fs::is_regular_file(name_or_path, ec)) return name_or_path;
  auto dir = ShippedTopologyDir(search);
  if (!dir.ok()) return dir.status().WithContext("unknown cluster '" + name_or_path + "'");
  const fs::path file = fs::path(*dir) / (name_or_path + ".toml");
  if (fs::is_regular_file(file, ec)) return file.string();
  const std::vector<std::string> names = TopologyNamesIn(*dir);
  return Status::NotFound("unknown cluster '" + name_or_path + "'" +
                          DidYouMean(name_or_path, names) +
                          ": not a file, and not one of the shipped clusters in " + *dir + " (" +
                          JoinNames(names) + "; meshplan topo list describes them)");
}

Result<Topology> LoadTopology(const std::string& name_or_path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto path, ResolveTopologyPath(name_or_path, ProgramTopologySearch()));
  return LoadTopologyFile(path);
}

Result<std::vector<ShippedTopology>> LoadTopologiesIn(const std::string& dir) {
  if (!IsDirectory(dir)) return Status::NotFound(dir + ": not a directory");
  std::vector<ShippedTopology> out;
  for (const std::string& name : TopologyNamesIn(dir)) {
    const std::string path = (fs::path(dir) / (name + ".toml")).string();
    MESHPLAN_ASSIGN_OR_RETURN(auto topology, LoadTopologyFile(path));
    out.push_back({name, path, std::move(topology)});
  }
  return out;
}

}  // namespace meshplan
