// A minimal JSON reader for the tests (CLI and report output): enough to check that a document
// parses and to read its values. Checked by tests/tools/cli_test.cc (JsonReader).
#pragma once

#include <cctype>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace meshplan::testing {

// Parse() reads all of `text` (one value, whitespace around it) or fails; objects keep their keys
// in order.
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> items;                            // kArray
  std::vector<std::pair<std::string, Json>> members;  // kObject

  const Json* Find(const std::string& key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  static bool Parse(const std::string& text, Json* out) {
    *out = Json{};
    size_t at = 0;
    return Value(text, at, out) && (Space(text, at), at == text.size());
  }

 private:
  static void Space(const std::string& t, size_t& at) {
    while (at < t.size() && std::isspace(static_cast<unsigned char>(t[at]))) ++at;
  }
  static bool Literal(const std::string& t, size_t& at, const char* word) {
    const std::string w(word);
    if (t.compare(at, w.size(), w) != 0) return false;
    at += w.size();
    return true;
  }
  static bool String(const std::string& t, size_t& at, std::string* out) {
    if (at >= t.size() || t[at] != '"') return false;
    for (++at; at < t.size(); ++at) {
      const char c = t[at];
      if (c == '"') {
        ++at;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (++at >= t.size()) return false;
        const char e = t[at];
        if (e == 'u') {
          if (at + 4 >= t.size()) return false;
          out->push_back('?');
          at += 4;
        } else if (const size_t k = std::string("\"\\/bfnrt").find(e); k != std::string::npos) {
          out->push_back("\"\\/\b\f\n\r\t"[k]);  // the character the escape stands for
        } else {
          return false;
        }
      } else {
        out->push_back(c);
      }
    }
    return false;
  }
  static bool Value(const std::string& t, size_t& at, Json* out) {
    Space(t, at);
    if (at >= t.size()) return false;
    const char c = t[at];
    if (c == '{' || c == '[') {
      out->kind = c == '{' ? kObject : kArray;
      const char close = c == '{' ? '}' : ']';
      ++at;
      Space(t, at);
      if (at < t.size() && t[at] == close) return ++at, true;
      while (true) {
        Space(t, at);
        Json item;
        if (out->kind == kObject) {
          std::string key;
          if (!String(t, at, &key)) return false;
          Space(t, at);
          if (at >= t.size() || t[at++] != ':') return false;
          if (!Value(t, at, &item)) return false;
          out->members.emplace_back(std::move(key), std::move(item));
        } else {
          if (!Value(t, at, &item)) return false;
          out->items.push_back(std::move(item));
        }
        Space(t, at);
        if (at >= t.size()) return false;
        if (t[at] == close) return ++at, true;
        if (t[at++] != ',') return false;
      }
    }
    if (c == '"') {
      out->kind = kString;
      return String(t, at, &out->string);
    }
    if (Literal(t, at, "true")) return out->kind = kBool, out->boolean = true, true;
    if (Literal(t, at, "false")) return out->kind = kBool, true;
    if (Literal(t, at, "null")) return out->kind = kNull, true;
    const size_t end = t.find_first_not_of("+-0123456789.eE", at);
    const std::string number =
        t.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (number.empty()) return false;
    size_t used = 0;
    try {
      out->number = std::stod(number, &used);
    } catch (const std::exception&) {
      return false;
    }
    if (used != number.size()) return false;
    out->kind = kNumber;
    at += used;
    return true;
  }
};

}  // namespace meshplan::testing
