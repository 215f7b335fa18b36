#include "executor/io/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace meshplan::exec {
namespace {

namespace fs = std::filesystem;

// Builds .npy bytes by hand from the format description (numpy.lib.format): the magic
// "\x93NUMPY", major and minor version bytes, the header length as a little-endian uint16
// (1.0) or uint32 (2.0), the header text padded with spaces and ended by '\n' so the data
// starts at a multiple of 64, then the raw data.
std::string BuildNpy(int major, int minor, const std::string& dict, const std::string& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t unpadded = 8 + len_bytes + dict.size() + 1;
  const size_t header_len = dict.size() + (64 - unpadded % 64) % 64 + 1;
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(static_cast<char>(minor));
  for (size_t i = 0; i < len_bytes; ++i)
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xFF));
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  return out + data;
}

std::string LittleEndianF8(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    const uint64_t raw = std::bit_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((raw >> (8 * b)) & 0xFF));
  }
  return out;
}

std::string LittleEndianF4(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    const uint32_t raw = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((raw >> (8 * b)) & 0xFF));
  }
  return out;
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_npy_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string WriteRaw(const std::string& name, const std::string& bytes) const {
    const std::string path = Path(name);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  static std::string ReadRaw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The error is one line, starts with the file name and contains `what`.
  static void ExpectError(const Result<NpyArray>& r, const std::string& path,
                          const std::string& what) {
    ASSERT_FALSE(r.ok()) << "expected an error containing '" << what << "'";
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }

  fs::path dir_;
};

const std::string kF8Dict34 = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";

TEST_F(NpyTest, RoundTripFloat32IsExact) {
  std::vector<float> values;
  for (int i = 0; i < 24; ++i) values.push_back(static_cast<float>(i) * 0.1f - 1.3f);
  values[5] = -0.0f;
  values[6] = std::numeric_limits<float>::denorm_min();
  values[7] = std::numeric_limits<float>::max();
  values[8] = -std::numeric_limits<float>::infinity();
  const std::string path = Path("a.npy");
  ASSERT_TRUE(WriteNpyFloat32(path, {2, 3, 4}, values).ok());
  const Result<NpyArray> r = ReadNpy(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(r->values.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(r->values[i], static_cast<double>(values[i])) << i;
  EXPECT_TRUE(std::signbit(r->values[5]));
  EXPECT_EQ(fs::directory_iterator(dir_)->path().filename(), "a.npy");  // no temporary left
}

// The written bytes follow the spec: checked byte by byte, independent of the reader.
TEST_F(NpyTest, WrittenFileLayoutFollowsTheSpec) {
  const std::string path = Path("b.npy");
  ASSERT_TRUE(WriteNpyFloat32(path, {2, 1}, {1.0f, -2.0f}).ok());
  const std::string bytes = ReadRaw(path);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], '\x01');
  EXPECT_EQ(bytes[7], '\x00');
  const size_t header_len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  ASSERT_EQ(bytes.size(), 10 + header_len + 8);
  const std::string header = bytes.substr(10, header_len);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), header_len - 1);
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000, little-endian.
  EXPECT_EQ(bytes.substr(10 + header_len), std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0", 8));
}

TEST_F(NpyTest, OneDimensionalZeroDimensionalAndEmptyShapes) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<float> values;
    std::string printed;
  };
  const std::vector<Case> cases = {{{5}, {1, 2, 3, 4, 5}, "(5,)"},
                                   {{}, {7.5f}, "()"},
                                   {{0}, {}, "(0,)"},
                                   {{3, 0, 2}, {}, "(3, 0, 2)"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.printed);
    const std::string path = Path("s.npy");
    ASSERT_TRUE(WriteNpyFloat32(path, c.shape, c.values).ok());
    EXPECT_NE(ReadRaw(path).find("'shape': " + c.printed + ", }"), std::string::npos);
    const Result<NpyArray> r = ReadNpy(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->shape, c.shape);
    EXPECT_EQ(r->values, std::vector<double>(c.values.begin(), c.values.end()));
  }
}

TEST_F(NpyTest, ReadsHandBuiltFloat64Version1) {
  const std::vector<double> values = {1.0 / 3.0,         -2.5, 1e300, -1e-300, 0.0,  42.0,
                                      3.141592653589793, -7.0, 8.5,   9.25,    1e-5, -0.125};
  const std::string path = WriteRaw("f8.npy", BuildNpy(1, 0, kF8Dict34, LittleEndianF8(values)));
  const Result<NpyArray> r = ReadNpy(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r->values, values);
}

TEST_F(NpyTest, ReadsHandBuiltFloat32Version2) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  const std::string path =
      WriteRaw("v2.npy", BuildNpy(2, 0, dict, LittleEndianF4({0.5f, -1.5f, 3.0f})));
  const Result<NpyArray> r = ReadNpy(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(r->values, (std::vector<double>{0.5, -1.5, 3.0}));
}

// Other spellings a Python writer may produce: double quotes, any key order, no trailing
// comma, trailing comma inside the tuple, older 16-byte alignment.
TEST_F(NpyTest, AcceptsOtherValidHeaderSpellings) {
  const std::vector<std::string> dicts = {
      "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3, 4)}",
      "{'shape': (3, 4), 'fortran_order': False, 'descr': '<f8'}",
      "{'descr':'<f8','fortran_order':False,'shape':(3,4,),}",
  };
  const std::string data = LittleEndianF8(std::vector<double>(12, 2.0));
  for (const std::string& dict : dicts) {
    SCOPED_TRACE(dict);
    const Result<NpyArray> r = ReadNpy(WriteRaw("ok.npy", BuildNpy(1, 0, dict, data)));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->shape, (std::vector<int64_t>{3, 4}));
  }
  // 16-byte alignment (NumPy < 1.9): 10 + 70 = 80 bytes before the data.
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
  std::string header = dict + std::string(70 - dict.size() - 1, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + std::string(1, static_cast<char>(70)) +
                      std::string(1, '\0') + header + data;
  const Result<NpyArray> r = ReadNpy(WriteRaw("old.npy", bytes));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->values, std::vector<double>(12, 2.0));
}

TEST_F(NpyTest, MissingFile) {
  const std::string path = Path("absent.npy");
  const Result<NpyArray> r = ReadNpy(path);
  ExpectError(r, path, "no such file");
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
}

// /dev/zero would read forever (issue 49's "every input file through a capped reader"): a device
// or FIFO is refused before any read, naming the path.
TEST_F(NpyTest, ADeviceIsRefusedBeforeAnyRead) {
  auto r = ReadNpy("/dev/zero");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("/dev/zero: not a regular file"), std::string::npos)
      << r.status().message();
}

TEST_F(NpyTest, BadMagic) {
  std::string bytes = BuildNpy(1, 0, kF8Dict34, LittleEndianF8(std::vector<double>(12, 1.0)));
  bytes[1] = 'n';
  std::string path = WriteRaw("magic.npy", bytes);
  ExpectError(ReadNpy(path), path, "bad magic");
  path = WriteRaw("short.npy", "\x93NU");
  ExpectError(ReadNpy(path), path, "bad magic");
  path = WriteRaw("empty.npy", "");
  ExpectError(ReadNpy(path), path, "bad magic");
}

TEST_F(NpyTest, UnsupportedVersion) {
  const std::string path =
      WriteRaw("v3.npy", BuildNpy(3, 0, kF8Dict34, LittleEndianF8(std::vector<double>(12, 1.0))));
  ExpectError(ReadNpy(path), path, "unsupported .npy format version 3.0");
  const std::string path11 =
      WriteRaw("v11.npy", BuildNpy(1, 1, kF8Dict34, LittleEndianF8(std::vector<double>(12, 1.0))));
  ExpectError(ReadNpy(path11), path11, "version 1.1");
}

TEST_F(NpyTest, UnsupportedDtypes) {
  for (const std::string descr : {">f4", ">f8", "|f4", "<f2", "<i4", "float32"}) {
    SCOPED_TRACE(descr);
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }";
    const std::string path = WriteRaw("dtype.npy", BuildNpy(1, 0, dict, std::string(16, '\0')));
    ExpectError(ReadNpy(path), path, "unsupported dtype '" + descr + "'");
  }
}

TEST_F(NpyTest, FortranOrder) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }";
  const std::string path =
      WriteRaw("fortran.npy", BuildNpy(1, 0, dict, LittleEndianF8(std::vector<double>(12, 1.0))));
  ExpectError(ReadNpy(path), path, "Fortran");
}

TEST_F(NpyTest, TruncatedData) {
  // (3, 4) float64 needs 96 bytes of data; give 40.
  const std::string path = WriteRaw("trunc.npy", BuildNpy(1, 0, kF8Dict34, std::string(40, '\0')));
  const Result<NpyArray> r = ReadNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": truncated: expected 96 bytes of data, found 40");
}

TEST_F(NpyTest, TruncatedHeader) {
  const std::string full = BuildNpy(1, 0, kF8Dict34, "");
  std::string path = WriteRaw("h.npy", full.substr(0, 30));
  ExpectError(ReadNpy(path), path, "truncated");
  path = WriteRaw("h2.npy", full.substr(0, 9));
  ExpectError(ReadNpy(path), path, "truncated");
  path = WriteRaw("h3.npy", full.substr(0, 7));
  ExpectError(ReadNpy(path), path, "truncated");
}

TEST_F(NpyTest, TrailingBytesAfterData) {
  const std::string path = WriteRaw(
      "long.npy", BuildNpy(1, 0, kF8Dict34, LittleEndianF8(std::vector<double>(12, 1.0)) + "xyz"));
  ExpectError(ReadNpy(path), path, "3 unexpected bytes");
}

TEST_F(NpyTest, ShapeMismatch) {
  const std::string path = Path("shape.npy");
  ASSERT_TRUE(WriteNpyFloat32(path, {3, 4}, std::vector<float>(12, 1.0f)).ok());
  const Result<NpyArray> r = ReadNpyWithShape(path, {4, 3});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": shape (3, 4) does not match the expected (4, 3)");
  const Result<NpyArray> ok = ReadNpyWithShape(path, {3, 4});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->values.size(), 12u);
  // The file's own errors pass through unchanged.
  ExpectError(ReadNpyWithShape(Path("none.npy"), {3, 4}), Path("none.npy"), "no such file");
}

TEST_F(NpyTest, MalformedHeaders) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not a dict", "malformed header: expected '{'"},
      {"{'descr': '<f8', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f8', 'shape': (2,)}", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}", "trailing comma"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [2]}", "expected '('"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3 4)}", "expected ',' or ')'"},
      {"{'descr': '<f8', 'fortran_order': false, 'shape': (2,)}", "expected True or False"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f8' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr' '<f8', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "malformed header"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x", "unexpected text after"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "malformed header"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "too large"},
  };
  for (const auto& [dict, what] : cases) {
    SCOPED_TRACE(dict);
    const std::string path = WriteRaw("bad.npy", BuildNpy(1, 0, dict, std::string(16, '\0')));
    ExpectError(ReadNpy(path), path, what);
  }
}

TEST_F(NpyTest, WriteRejectsShapeValueMismatch) {
  const std::string path = Path("w.npy");
  const Status s = WriteNpyFloat32(path, {2, 3}, std::vector<float>(5, 0.0f));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(WriteNpyFloat32(path, {-1, 3}, {}).ok());
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(NpyTest, WriteIntoMissingDirectoryFails) {
  const Status s = WriteNpyFloat32(Path("nodir/x.npy"), {1}, {1.0f});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nodir/x.npy"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace meshplan::exec
