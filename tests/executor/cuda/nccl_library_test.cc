// LoadNccl (executor/cuda/nccl_library.h): errors that name the library and the reason, and, where
// this machine has NCCL, a library whose functions work. No GPU needed: ncclGetVersion and
// ncclGetErrorString touch no device.
#include <gtest/gtest.h>

#if MESHPLAN_HAVE_NCCL
#include <string>

#include "executor/cuda/nccl_library.h"

namespace meshplan::exec::cuda {
namespace {

// gtest without gmock: whether `text` contains `part`, showing `text` when it does not.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

TEST(LoadNccl, MissingLibraryIsAnErrorNamingItAndTheReason) {
  auto nccl = LoadNccl("libmeshplan_no_such_nccl.so.2");
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(),
            ErrorCode::kInvalidInput);  // the user's to fix: exit 2 in the CLI
  EXPECT_TRUE(Contains(nccl.status().message(), "cannot load libmeshplan_no_such_nccl.so.2"));
  EXPECT_TRUE(Contains(nccl.status().message(), "cannot open shared object file"));  // dlerror()
  EXPECT_EQ(nccl.status().message().find('\n'), std::string::npos);
}

TEST(LoadNccl, LibraryWithoutNcclNamesTheMissingSymbol) {
  auto nccl = LoadNccl("libm.so.6");  // loads, but has no NCCL function
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(nccl.status().message(), "libm.so.6 has no ncclGetVersion"));
  EXPECT_TRUE(Contains(nccl.status().message(), "undefined symbol"));  // dlerror()
}

void ExpectWorkingNccl(const NcclLibrary& nccl) {
  const void* functions[] = {reinterpret_cast<const void*>(nccl.GetVersion),
                             reinterpret_cast<const void*>(nccl.GetErrorString),
                             reinterpret_cast<const void*>(nccl.GetUniqueId),
                             reinterpret_cast<const void*>(nccl.CommInitAll),
                             reinterpret_cast<const void*>(nccl.CommInitRank),
                             reinterpret_cast<const void*>(nccl.CommDestroy),
                             reinterpret_cast<const void*>(nccl.CommAbort),
                             reinterpret_cast<const void*>(nccl.CommGetAsyncError),
                             reinterpret_cast<const void*>(nccl.GroupStart),
                             reinterpret_cast<const void*>(nccl.GroupEnd),
                             reinterpret_cast<const void*>(nccl.Send),
                             reinterpret_cast<const void*>(nccl.Recv)};
  for (const void* fn : functions) EXPECT_NE(fn, nullptr);
  int version = 0;
  ASSERT_EQ(nccl.GetVersion(&version), ncclSuccess);
  const std::string name = NcclVersionName(version);
  EXPECT_GE(std::stoi(name.substr(0, name.find('.'))), 2)
      << "NCCL " << name << " (code " << version << ")";
  EXPECT_NE(std::string(nccl.GetErrorString(ncclInvalidArgument)), "");
}

#ifdef MESHPLAN_NCCL_LIBRARY_PATH
// The libnccl that CMake found beside the CUDA toolkit loads, by its path.
TEST(LoadNccl, TheToolkitsLibraryLoads) {
  auto nccl = LoadNccl(MESHPLAN_NCCL_LIBRARY_PATH);
  ASSERT_TRUE(nccl.ok()) << nccl.status().message();
  ExpectWorkingNccl(**nccl);
}
#endif

// By its default name, as the runs load it: found through the loader's search path, or an error
// that names libnccl.so.2.
TEST(LoadNccl, DefaultNameLoadsOrNamesLibnccl) {
  auto nccl = LoadNccl();
  if (!nccl.ok()) {
    EXPECT_TRUE(Contains(nccl.status().message(), "libnccl.so.2"));
    GTEST_SKIP() << "libnccl.so.2 is not on this machine's library path: "
                 << nccl.status().message();
  }
  ExpectWorkingNccl(**nccl);
}

TEST(NcclVersionName, BothEncodings) {
  EXPECT_EQ(NcclVersionName(22809), "2.28.9");  // 2.9 and later: major*10000 + minor*100 + patch
  EXPECT_EQ(NcclVersionName(2804), "2.8.4");    // before 2.9: major*1000 + minor*100 + patch
}

}  // namespace
}  // namespace meshplan::exec::cuda
#endif  // MESHPLAN_HAVE_NCCL
