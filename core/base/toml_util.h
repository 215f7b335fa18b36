// Pieces shared by the strict TOML readers and writers (topology and plan files).
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/did_you_mean.h"
#include "core/base/status.h"

namespace meshplan {

// The names the TOML spec uses for value types, for "expected X, got Y" messages.
std::string TomlTypeName(const toml::node& node);
// A TOML basic string with the escapes the spec requires.
std::string TomlQuote(std::string_view text);
// Parses a document; a syntax error becomes "SOURCE:LINE:COLUMN: description".
Result<toml::table> ParseTomlDocument(std::string_view text, const std::string& source);
// Input files (topologies, plans, sweep files, document lengths) are at most this large.
inline constexpr size_t kMaxTextFileBytes = size_t{64} << 20;
// Reads a whole file; a missing file is NotFound "PATH: cannot open file", a directory is Invalid
// "PATH: is a directory, expected a file", and more than kMaxTextFileBytes (a huge file, or
// /dev/zero) Invalid "PATH: larger than 64 MiB, ...".
Result<std::string> ReadTextFile(const std::string& path);
// Every key of `table` must be in `allowed`; errors read "SOURCE: unknown key 'PREFIX.KEY'",
// followed by DidYouMean's suggestion when one is close.
Status CheckTomlKeys(const toml::table& table, const std::string& prefix,
                     std::span<const std::string_view> allowed, const std::string& source);
Status CheckTomlKeys(const toml::table& table, const std::string& prefix,
                     std::initializer_list<std::string_view> allowed, const std::string& source);
// Every problem with `table`'s keys at once, each "unknown key 'PREFIX.KEY'" (with DidYouMean's
// suggestion) or "PREFIX.KEY: missing required key", appended to `problems` (no source).
void CollectKeyProblems(const toml::table& table, const std::string& prefix,
                        std::span<const std::string_view> allowed,
                        std::span<const std::string_view> required,
                        std::vector<std::string>* problems);

}  // namespace meshplan
