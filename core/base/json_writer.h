// A minimal JSON writer for machine-readable output (objects, arrays, strings, numbers), shared by
// the CLI's reports and the simulator's trace writer.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshplan {

class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key) {
    Separate();
    AppendString(key);
    out_ += ':';
    after_key_ = true;
  }
  void String(std::string_view value) {
    Separate();
    AppendString(value);
  }
  void Number(double value) {
    Separate();
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    // Shortest text that reads back as the same double.
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, result.ptr);
  }
  // A byte count: always an integer (rounded), never 1.0752e+10; null when not finite.
  void Bytes(double value) {
    if (!std::isfinite(value)) {
      Separate();
      out_ += "null";
      return;
    }
    Int(std::llround(value));
  }
  void Int(long long value) {
    Separate();
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, result.ptr);
  }
  void Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
  }
  // Appends a value that is already valid JSON text (e.g. a number in a chosen format).
  void Raw(std::string_view json) {
    Separate();
    out_ += json;
  }
  // Reserves capacity for large documents.
  void Reserve(size_t bytes) { out_.reserve(bytes); }
  const std::string& str() const { return out_; }
  // Moves the document out (the writer is left empty).
  std::string Take() { return std::move(out_); }

 private:
  void Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    out_ += c;
    first_.pop_back();
  }
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void AppendString(std::string_view s) {
    out_ += '"';
    size_t plain = 0;  // start of the run of characters that need no escape
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) continue;
      out_.append(s.data() + plain, i - plain);
      plain = i + 1;
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            out_ += buffer;
          }
      }
    }
    out_.append(s.data() + plain, s.size() - plain);
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace meshplan
