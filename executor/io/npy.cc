#include "executor/io/npy.h"

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/base/atomic_file.h"

namespace meshplan::exec {
namespace {

constexpr std::string_view kMagic("\x93NUMPY", 6);

// "()", "(5,)", "(3, 4)": the way NumPy prints a shape tuple.
std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Strict parser of the header dictionary, a Python literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// followed by padding. Accepts exactly the keys descr, fortran_order and shape, each once,
// in any order, with an optional trailing comma; strings in single or double quotes without
// escapes; only whitespace after the closing brace. Errors give the offset in the header.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Result<NpyHeader> Parse() {
    NpyHeader header;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    SkipSpace();
    while (!Consume('}')) {
      std::string key;
      MESHPLAN_RETURN_IF_ERROR(ParseString(key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (seen_descr) return Error("duplicate key 'descr'");
        seen_descr = true;
        MESHPLAN_RETURN_IF_ERROR(ParseString(header.descr));
      } else if (key == "fortran_order") {
        if (seen_fortran) return Error("duplicate key 'fortran_order'");
        seen_fortran = true;
        MESHPLAN_RETURN_IF_ERROR(ParseBool(header.fortran_order));
      } else if (key == "shape") {
        if (seen_shape) return Error("duplicate key 'shape'");
        seen_shape = true;
        MESHPLAN_RETURN_IF_ERROR(ParseShape(header.shape));
      } else {
        return Error("unexpected key '" + key + "'");
      }
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
      } else if (Peek() != '}') {
        return Error("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the closing '}'");
    if (!seen_descr) return Status::Invalid("malformed header: missing key 'descr'");
    if (!seen_fortran) return Status::Invalid("malformed header: missing key 'fortran_order'");
    if (!seen_shape) return Status::Invalid("malformed header: missing key 'shape'");
    return header;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  Status Error(const std::string& what) const {
    return Status::Invalid("malformed header: " + what + " at offset " + std::to_string(pos_));
  }

  Status ParseString(std::string& out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    const std::string_view body = text_.substr(pos_, end - pos_);
    if (body.find('\\') != std::string_view::npos || body.find('\n') != std::string_view::npos) {
      return Error("unsupported character in string");
    }
    out = std::string(body);
    pos_ = end + 1;
    return Status::Ok();
  }

  Status ParseBool(bool& out) {
    if (ConsumeWord("True")) {
      out = true;
    } else if (ConsumeWord("False")) {
      out = false;
    } else {
      return Error("expected True or False");
    }
    return Status::Ok();
  }

  Status ParseInt(int64_t& out) {
    if (Peek() < '0' || Peek() > '9') return Error("expected a non-negative integer");
    int64_t value = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      const int digit = Peek() - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return Error("dimension too large");
      value = value * 10 + digit;
      ++pos_;
    }
    out = value;
    return Status::Ok();
  }

  // "()", "(n,)" or "(n1, n2, ...)" with an optional trailing comma; "(n)" is an integer in
  // Python, not a tuple, and is rejected.
  Status ParseShape(std::vector<int64_t>& out) {
    out.clear();
    if (!Consume('(')) return Error("expected '(' starting the shape tuple");
    SkipSpace();
    if (Consume(')')) return Status::Ok();
    bool trailing_comma = false;
    while (true) {
      int64_t dim = 0;
      MESHPLAN_RETURN_IF_ERROR(ParseInt(dim));
      out.push_back(dim);
      SkipSpace();
      trailing_comma = Consume(',');
      SkipSpace();
      if (Consume(')')) break;
      if (!trailing_comma) return Error("expected ',' or ')' in the shape tuple");
    }
    if (out.size() == 1 && !trailing_comma)
      return Error("a 1-d shape needs a trailing comma, as in (5,)");
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

uint64_t LoadLittleEndian(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return Status::NotFound(path + ": no such file");
  if (std::filesystem::is_directory(st))
    return Status::Invalid(path + ": is a directory, not a .npy file");
  // A device or FIFO (/dev/zero, a pipe) has no size to check against and may never end: only a
  // regular file, whose size the caller's memory check can see, is read.
  if (!std::filesystem::is_regular_file(st))
    return Status::Invalid(path +
                           ": not a regular file (a device, FIFO or socket), not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return Status::Io(path + ": read failed");
  return bytes.str();
}

}  // namespace

Result<NpyArray> ReadNpy(const std::string& path) {
  Result<std::string> file = ReadWholeFile(path);
  if (!file.ok()) return file.status();
  return ParseNpy(*file, path);
}

Result<NpyArray> ParseNpy(std::string_view bytes, const std::string& path) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  auto invalid = [&path](const std::string& what) { return Status::Invalid(path + ": " + what); };

  if (bytes.size() < kMagic.size() || std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    return invalid("not a .npy file (bad magic)");
  }
  if (bytes.size() < 8) return invalid("truncated: file ends inside the version bytes");
  const int major = u[6], minor = u[7];
  if (!((major == 1 || major == 2) && minor == 0)) {
    return invalid("unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  if (bytes.size() < prefix) return invalid("truncated: file ends inside the header length");
  const uint64_t header_len = LoadLittleEndian(u + 8, static_cast<int>(len_bytes));
  if (bytes.size() - prefix < header_len) {
    return invalid("truncated: header of " + std::to_string(header_len) + " bytes, found " +
                   std::to_string(bytes.size() - prefix));
  }
  Result<NpyHeader> parsed =
      HeaderParser(std::string_view(bytes).substr(prefix, header_len)).Parse();
  if (!parsed.ok()) return parsed.status().WithContext(path);
  const NpyHeader& header = *parsed;

  int item_size = 0;
  if (header.descr == "<f4") {
    item_size = 4;
  } else if (header.descr == "<f8") {
    item_size = 8;
  } else {
    return invalid("unsupported dtype '" + header.descr + "' (supported: '<f4', '<f8')");
  }
  if (header.fortran_order)
    return invalid("Fortran-order arrays are not supported (need fortran_order False)");

  // Element count, guarding against overflow of count * item_size.
  int64_t count = 1;
  const int64_t max_count = std::numeric_limits<int64_t>::max() / item_size;
  for (int64_t dim : header.shape) {
    if (dim == 0) {
      count = 0;
      break;
    }
    if (count > max_count / dim)
      return invalid("shape " + ShapeString(header.shape) + " is too large");
    count *= dim;
  }
  const uint64_t data_offset = prefix + header_len;
  const uint64_t expected = static_cast<uint64_t>(count) * static_cast<uint64_t>(item_size);
  const uint64_t found = bytes.size() - data_offset;
  if (found < expected) {
    return invalid("truncated: expected " + std::to_string(expected) + " bytes of data, found " +
                   std::to_string(found));
  }
  if (found > expected) {
    return invalid(std::to_string(found - expected) + " unexpected bytes after the " +
                   std::to_string(expected) + " bytes of data");
  }

  NpyArray array;
  array.shape = header.shape;
  array.values.resize(static_cast<size_t>(count));
  const unsigned char* data = u + data_offset;
  for (int64_t i = 0; i < count; ++i) {
    if (item_size == 4) {
      const auto raw = static_cast<uint32_t>(LoadLittleEndian(data + 4 * i, 4));
      array.values[static_cast<size_t>(i)] = static_cast<double>(std::bit_cast<float>(raw));
    } else {
      array.values[static_cast<size_t>(i)] =
          std::bit_cast<double>(LoadLittleEndian(data + 8 * i, 8));
    }
  }
  return array;
}

Result<NpyArray> ReadNpyWithShape(const std::string& path, const std::vector<int64_t>& expected) {
  Result<NpyArray> array = ReadNpy(path);
  if (!array.ok()) return array;
  if (array->shape != expected) {
    return Status::Invalid(path + ": shape " + ShapeString(array->shape) +
                           " does not match the expected " + ShapeString(expected));
  }
  return array;
}

Status WriteNpyFloat32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& values) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return Status::Invalid(path + ": negative dimension in shape " + ShapeString(shape));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 4 / dim) {
      return Status::Invalid(path + ": shape " + ShapeString(shape) + " is too large");
    }
    count *= dim;
  }
  if (static_cast<uint64_t>(count) != values.size()) {
    return Status::Invalid(path + ": shape " + ShapeString(shape) + " holds " +
                           std::to_string(count) + " values, given " +
                           std::to_string(values.size()));
  }
  // Version 1.0: magic, 1, 0, uint16 header length, header padded with spaces and ended by '\n'
  // so the data starts at a multiple of 64 bytes.
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + ShapeString(shape) + ", }";
  const size_t unpadded = 10 + dict.size() + 1;
  const size_t padding = (64 - unpadded % 64) % 64;
  const size_t header_len = dict.size() + padding + 1;
  if (header_len > 0xFFFF)
    return Status::Invalid(path + ": shape " + ShapeString(shape) + " has too many dimensions");

  std::string out;
  out.reserve(10 + header_len + values.size() * 4);
  out.append(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header_len & 0xFF));
  out.push_back(static_cast<char>((header_len >> 8) & 0xFF));
  out += dict;
  out.append(padding, ' ');
  out.push_back('\n');
  for (float v : values) {
    const uint32_t raw = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((raw >> (8 * b)) & 0xFF));
  }
  return WriteFileAtomically(path, out);
}

}  // namespace meshplan::exec
