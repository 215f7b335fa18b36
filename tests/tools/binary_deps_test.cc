// The meshplan binary's own shared-library needs (DT_NEEDED of its ELF dynamic section): it must
// not need libnccl, so that it starts on machines without NCCL (NCCL is dlopened by the runs that
// ask for it, executor/cuda/nccl_library.h).
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace meshplan {
namespace {

// The DT_NEEDED names of a 64-bit little-endian ELF file (the section of type SHT_DYNAMIC and the
// string table it links to). Empty when the file is not one or has no dynamic section; gtest
// failures name what is malformed.
std::vector<std::string> NeededLibraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  std::vector<std::string> needed;
  Elf64_Ehdr header;
  if (file.size() < sizeof header) {
    ADD_FAILURE() << path << ": not an ELF file (" << file.size() << " bytes)";
    return needed;
  }
  std::memcpy(&header, file.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB) {
    ADD_FAILURE() << path << ": not a 64-bit little-endian ELF file";
    return needed;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr s{};
    const size_t at = header.e_shoff + i * header.e_shentsize;
    if (header.e_shentsize >= sizeof s && at + sizeof s <= file.size())
      std::memcpy(&s, file.data() + at, sizeof s);
    return s;
  };
  for (size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr dynamic = section(i);
    if (dynamic.sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr strings = section(dynamic.sh_link);
    for (size_t at = dynamic.sh_offset;
         at + sizeof(Elf64_Dyn) <= dynamic.sh_offset + dynamic.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      if (at + sizeof entry > file.size()) break;
      std::memcpy(&entry, file.data() + at, sizeof entry);
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag != DT_NEEDED) continue;
      const size_t name = strings.sh_offset + entry.d_un.d_val;
      if (entry.d_un.d_val >= strings.sh_size || name >= file.size()) {
        ADD_FAILURE() << path << ": DT_NEEDED name outside the string table";
        continue;
      }
      needed.emplace_back(file.data() + name, strnlen(file.data() + name, file.size() - name));
    }
  }
  return needed;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  return all;
}

// The reader finds what every dynamically linked program needs, so an empty answer below cannot
// pass for "no libnccl".
TEST(MeshplanBinary, ReaderFindsTheCRuntime) {
  const auto needed = NeededLibraries(MESHPLAN_BINARY);
  EXPECT_TRUE(std::any_of(needed.begin(), needed.end(),
                          [](const std::string& n) { return n.rfind("libc.so", 0) == 0; }))
      << MESHPLAN_BINARY << " needs: " << Joined(needed);
}

TEST(MeshplanBinary, DoesNotNeedNccl) {
  const auto needed = NeededLibraries(MESHPLAN_BINARY);
  ASSERT_FALSE(needed.empty()) << MESHPLAN_BINARY << ": no DT_NEEDED entries found";
  for (const std::string& n : needed) {
    EXPECT_EQ(n.find("nccl"), std::string::npos)
        << MESHPLAN_BINARY << " needs " << n
        << ": it would not start on a machine without NCCL (needs: " << Joined(needed) << ")";
  }
}

// Issue 32: the binary plans on a laptop or a login node without CUDA or MPI. The CUDA runtime is
// linked in statically (it opens the driver itself), cuDNN and NCCL are opened at run time, and
// MPI lives in the plug-in libmeshplan_mpi.so (executor/transport/mpi_plugin.h).
TEST(MeshplanBinary, NeedsNoCudaRuntimeCudnnOrMpi) {
  const auto needed = NeededLibraries(MESHPLAN_BINARY);
  ASSERT_FALSE(needed.empty()) << MESHPLAN_BINARY << ": no DT_NEEDED entries found";
  for (const std::string& n : needed) {
    for (const char* library : {"libcudart", "libcudnn", "libcublas", "libcuda.", "libmpi"}) {
      EXPECT_EQ(n.rfind(library, 0), std::string::npos)
          << MESHPLAN_BINARY << " needs " << n << " (needs: " << Joined(needed) << ")";
    }
  }
}

}  // namespace
}  // namespace meshplan
