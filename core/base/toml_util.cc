#include "core/base/toml_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace meshplan {

std::string TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    default:
      return "nothing";
  }
}

std::string TomlQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", u);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {
Status SyntaxError(const toml::parse_error& error, const std::string& source) {
  return Status::Invalid(source + ":" + std::to_string(error.source().begin.line) + ":" +
                         std::to_string(error.source().begin.column) + ": " +
                         std::string(error.description()));
}
}  // namespace

Result<toml::table> ParseTomlDocument(std::string_view text, const std::string& source) {
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    return SyntaxError(error, source);
  }
#else
  toml::parse_result parsed = toml::parse(text, source);
  if (!parsed) return SyntaxError(parsed.error(), source);
  return std::move(parsed).table();
#endif
}

Result<std::string> ReadTextFile(const std::string& path) {
  // A directory opens as a stream on Linux and reads as empty: say what it is instead.
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return Status::Invalid(path + ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open file");
  // A regular file past the limit is refused before reading; anything else (a pipe, a device) is
  // read in pieces up to the limit, so that /dev/zero is refused, not exhausted. The string is
  // reserved once (the file's size, or the limit: address space, not resident until read) so
  // that growing never holds two copies: at most the limit is resident (issue 49).
  std::string text;
  char buffer[1 << 16];
  const auto status = std::filesystem::status(path, error);
  if (!error && std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, error);
    if (!error && size > kMaxTextFileBytes) {
      return Status::Invalid(path + ": larger than " + std::to_string(kMaxTextFileBytes >> 20) +
                             " MiB, too large for an input file");
    }
    if (!error) text.reserve(static_cast<size_t>(size) + 1);
  } else {
    text.reserve(kMaxTextFileBytes + sizeof buffer);
  }
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTextFileBytes) {
      return Status::Invalid(path + ": larger than " + std::to_string(kMaxTextFileBytes >> 20) +
                             " MiB, too large for an input file");
    }
  }
  if (in.bad()) return Status::Io(path + ": read failed");
  return text;
}

Status CheckTomlKeys(const toml::table& table, const std::string& prefix,
                     std::initializer_list<std::string_view> allowed, const std::string& source) {
  return CheckTomlKeys(table, prefix,
                       std::span<const std::string_view>(allowed.begin(), allowed.size()), source);
}

void CollectKeyProblems(const toml::table& table, const std::string& prefix,
                        std::span<const std::string_view> allowed,
                        std::span<const std::string_view> required,
                        std::vector<std::string>* problems) {
  auto full = [&](std::string_view name) {
    return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
  };
  std::vector<std::string> suggested;  // "(did you mean 'X'?)" of each unknown key
  for (auto&& [key, node] : table) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key.str() == a;
    if (known) continue;
    const std::string hint = DidYouMean(key.str(), allowed);
    suggested.push_back(hint);
    problems->push_back("unknown key '" + full(key.str()) + "'" + hint);
  }
  for (std::string_view name : required) {
    if (table.contains(name)) continue;
    // A misspelling already names it ("memory_gb ... did you mean 'memory_GB'?").
    const std::string hint = " (did you mean '" + std::string(name) + "'?)";
    if (std::find(suggested.begin(), suggested.end(), hint) != suggested.end()) continue;
    problems->push_back(full(name) + ": missing required key");
  }
}

Status CheckTomlKeys(const toml::table& table, const std::string& prefix,
                     std::span<const std::string_view> allowed, const std::string& source) {
  for (auto&& [key, node] : table) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key.str() == a;
    if (!known) {
      const std::string name(key.str());
      return Status::Invalid(source + ": unknown key '" +
                             (prefix.empty() ? name : prefix + "." + name) + "'" +
                             DidYouMean(name, allowed));
    }
  }
  return Status::Ok();
}

}  // namespace meshplan
