// --append onto an existing CSV file (core/base/csv_append.h): whatever the file holds, an append
// either refuses it with one line and leaves it unchanged, or leaves it holding its old bytes
// (a '\n' added to an unterminated last line) followed by the rows.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "core/base/csv_append.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/meshplan_fuzz_csv_append_" + std::to_string(::getpid());
  const std::string before(reinterpret_cast<const char*>(data), size);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << before;
  const std::string header = "plan,scheme,time_s\n", rows = "p.toml,ring,0.5\n";
  const meshplan::Status st = meshplan::AppendCsvRows(path, header, rows);
  const std::string after = ReadAll(path);
  std::remove(path.c_str());
  if (!st.ok()) {
    meshplan::fuzz::CheckOneLine(st);
    meshplan::fuzz::Check(after == before, "a refused append changed the file");
    return 0;
  }
  if (before.empty()) {
    meshplan::fuzz::Check(after == header + rows, "a new file is not the header and the rows");
    return 0;
  }
  const std::string expected = before + (before.back() == '\n' ? "" : "\n") + rows;
  meshplan::fuzz::Check(after == expected, "the file is not its old bytes followed by the rows");
  return 0;
}
