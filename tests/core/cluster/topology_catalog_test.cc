// Shipped clusters by name: which directories are searched for a program in its build tree or
// installed (possibly moved), names versus paths, the error for an unknown name (listing the
// names, which the test takes from the directory it made), and the real topologies/ directory.
#include "core/cluster/topology_catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

const fs::path kShipped = fs::path(MESHPLAN_SOURCE_DIR) / "topologies";

// The *.toml names of a directory, read here with std::filesystem (not by the code under test).
std::vector<std::string> TomlStems(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class TopologyCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("meshplan_catalog_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  // A directory with copies of two shipped files.
  fs::path TwoClusters(const std::string& sub) {
    const fs::path dir = root_ / sub;
    fs::create_directories(dir);
    fs::copy_file(kShipped / "dgx-h100-1node.toml", dir / "dgx-h100-1node.toml");
    fs::copy_file(kShipped / "dgx-h100-4node.toml", dir / "dgx-h100-4node.toml");
    std::ofstream(dir / "README.md") << "not a cluster\n";
    return dir;
  }
  fs::path root_;
};

TEST(TopologyName, NoSlashAndNoTomlEnding) {
  EXPECT_TRUE(IsTopologyName("dgx-h100-4node"));
  EXPECT_TRUE(IsTopologyName("machine"));
  EXPECT_FALSE(IsTopologyName("dgx-h100-4node.toml"));
  EXPECT_FALSE(IsTopologyName("topologies/dgx-h100-4node"));
  EXPECT_FALSE(IsTopologyName("./x"));
  EXPECT_FALSE(IsTopologyName(""));
}

TEST(TopologyDirs, ProgramInItsBuildTreeReadsTheSourceTreeFirst) {
  TopologySearch s;
  s.program = "/src/build/tools/meshplan";
  s.build_dir = "/src/build";
  s.source_dir = "/src/topologies";
  s.install_dir = "/usr/local/share/meshplan/topologies";
  s.install_from_bin = "../share/meshplan/topologies";
  EXPECT_EQ(TopologyDirCandidates(s),
            (std::vector<std::string>{"/src/topologies", "/src/build/share/meshplan/topologies",
                                      "/usr/local/share/meshplan/topologies"}));
}

TEST(TopologyDirs, InstalledProgramReadsBesideItselfThenTheConfiguredPrefix) {
  TopologySearch s;
  s.program = "/opt/mp/bin/meshplan";  // installed with --prefix /opt/mp, configured for /usr/local
  s.build_dir = "/src/build";
  s.source_dir = "/src/topologies";
  s.install_dir = "/usr/local/share/meshplan/topologies";
  s.install_from_bin = "../share/meshplan/topologies";
  EXPECT_EQ(TopologyDirCandidates(s),
            (std::vector<std::string>{"/opt/mp/share/meshplan/topologies",
                                      "/usr/local/share/meshplan/topologies", "/src/topologies"}));
  // A build dir that is only a prefix of the program's directory name is not "inside".
  s.program = "/src/build2/meshplan";
  EXPECT_EQ(TopologyDirCandidates(s).front(), "/src/share/meshplan/topologies");
}

TEST_F(TopologyCatalog, TheFirstExistingCandidateIsTheShippedDirectory) {
  const fs::path installed = TwoClusters("prefix/share/meshplan/topologies");
  fs::create_directories(root_ / "prefix" / "bin");
  TopologySearch s;
  s.program = (root_ / "prefix" / "bin" / "meshplan").string();
  s.install_dir = (root_ / "missing").string();
  s.source_dir = kShipped.string();
  s.install_from_bin = "../share/meshplan/topologies";
  auto dir = ShippedTopologyDir(s);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(fs::path(*dir), installed);
  // None exists: an error naming where it looked.
  s.install_from_bin.clear();
  s.source_dir = (root_ / "nowhere").string();
  dir = ShippedTopologyDir(s);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(dir.status().message().find("nowhere"), std::string::npos) << dir.status().message();
  EXPECT_NE(dir.status().message().find("missing"), std::string::npos) << dir.status().message();
}

TEST_F(TopologyCatalog, NamesResolveInTheShippedDirectoryAndPathsStayPaths) {
  const fs::path shipped = TwoClusters("shipped");
  TopologySearch s;
  s.install_dir = shipped.string();
  // A name.
  auto path = ResolveTopologyPath("dgx-h100-4node", s);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(fs::path(*path), shipped / "dgx-h100-4node.toml");
  // A path, existing or not, is left to the loader.
  const std::string file = (kShipped / "dgx-h100-32node.toml").string();
  EXPECT_EQ(*ResolveTopologyPath(file, s), file);
  EXPECT_EQ(*ResolveTopologyPath("missing.toml", s), "missing.toml");
  // An existing file whose name looks like a cluster name is a file.
  const fs::path here = root_ / "mycluster";
  fs::copy_file(kShipped / "dgx-h100-1node.toml", here);
  const fs::path cwd = fs::current_path();
  fs::current_path(root_);
  path = ResolveTopologyPath("mycluster", s);
  fs::current_path(cwd);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, "mycluster");
}

TEST_F(TopologyCatalog, UnknownNameListsTheShippedNames) {
  const fs::path shipped = TwoClusters("shipped");
  TopologySearch s;
  s.install_dir = shipped.string();
  auto path = ResolveTopologyPath("dgx-h100-5node", s);
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.status().code(), ErrorCode::kNotFound);
  const std::string& m = path.status().message();
  EXPECT_NE(m.find("unknown cluster 'dgx-h100-5node'"), std::string::npos) << m;
  EXPECT_NE(m.find(shipped.string()), std::string::npos) << m;
  // Both files of the directory, sorted; the README is not a cluster.
  EXPECT_NE(m.find("(dgx-h100-1node, dgx-h100-4node;"), std::string::npos) << m;
  EXPECT_EQ(m.find("README"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(TopologyCatalogShipped, LoadsByNameFromTheSourceTreeInABuildTree) {
  // This test program runs from the build tree, so names resolve in the source tree.
  auto t = LoadTopology("dgx-h100-4node");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->num_gpus(), 32);  // 8 GPUs x 4 nodes, as the file says
  EXPECT_EQ(fs::path(t->source), kShipped / "dgx-h100-4node.toml");
  auto dir = ShippedTopologyDir(ProgramTopologySearch());
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(fs::path(*dir), kShipped);
}

TEST(TopologyCatalogShipped, ListsEveryFileOfTheDirectory) {
  auto clusters = LoadTopologiesIn(kShipped.string());
  ASSERT_TRUE(clusters.ok()) << clusters.status().message();
  std::vector<std::string> names;
  for (const ShippedTopology& c : *clusters) {
    names.push_back(c.name);
    EXPECT_EQ(fs::path(c.path), kShipped / (c.name + ".toml"));
  }
  EXPECT_EQ(names, TomlStems(kShipped));
  EXPECT_EQ(TopologyNamesIn(kShipped.string()), TomlStems(kShipped));
}

TEST_F(TopologyCatalog, ABadFileInTheDirectoryIsAnErrorNamingIt) {
  const fs::path dir = TwoClusters("shipped");
  std::ofstream(dir / "broken.toml") << "name = 3\n";
  auto clusters = LoadTopologiesIn(dir.string());
  ASSERT_FALSE(clusters.ok());
  EXPECT_NE(clusters.status().message().find("broken.toml"), std::string::npos)
      << clusters.status().message();
  EXPECT_FALSE(LoadTopologiesIn((root_ / "absent").string()).ok());
}

}  // namespace
}  // namespace meshplan
