// Suggestions for a mistyped name: a TOML key, a flag, a command, a scheme, a model or a cluster.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan {

// " (did you mean 'X'?)" for the allowed name nearest to `key` (edit distance, letters compared
// without case, so `Ring` finds `ring`) when it is close: at most max(2, size / 4) edits; ""
// otherwise.
std::string DidYouMean(std::string_view key, std::span<const std::string_view> allowed);
std::string DidYouMean(std::string_view key, std::initializer_list<std::string_view> allowed);
std::string DidYouMean(std::string_view key, const std::vector<std::string>& allowed);

}  // namespace meshplan
