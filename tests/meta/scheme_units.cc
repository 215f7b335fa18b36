#include "tests/meta/scheme_units.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>

namespace meshplan::scheme_units {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProgramDirs[] = {"core",   "planner",  "simulator", "executor",
                                        "report", "capacity", "tools"};

bool IsSourceFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh" || ext == ".in" ||
         ext == ".sh" || ext == ".py" || p.filename() == "CMakeLists.txt";
}

std::string UnitOf(const std::string& scheme) {
  std::string file = scheme;
  std::replace(file.begin(), file.end(), '-', '_');
  return "planner/schemes/" + file + ".cc";
}

bool ListContains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Where `scheme` may be named: its unit, the units of schemes whose names extend it, the registry.
bool MayName(const std::string& file, const std::string& scheme, const Options& o) {
  if (file == "planner/schemes/registry.h" || file == "planner/schemes/registry.cc") return true;
  if (file == UnitOf(scheme)) return true;
  for (const std::string& other : o.schemes) {
    if (other.rfind(scheme + "-", 0) == 0 && file == UnitOf(other)) return true;
  }
  return false;
}

// The name, case-insensitive, each '-' written as '-', '_' or nothing; whole words are checked by
// NamedAt (std::regex has no look-behind).
std::regex NamePattern(const std::string& scheme) {
  std::string body;
  for (char c : scheme) {
    if (c == '-') {
      body += "[-_]?";
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      body += c;
    } else {
      body += std::string("\\") + c;
    }
  }
  return std::regex(body, std::regex::icase);
}

// Whether a match [begin, end) of NamePattern is a word of its own: a non-alphanumeric character
// (or the line's end) on each side, or a CamelCase boundary ("NewLoongTrainStrategy": an upper-
// case first letter after a lower-case one; an upper-case letter after the match). "GpuSpec"
// holds no "usp".
bool IsWord(const std::string& line, size_t begin, size_t end) {
  auto ch = [&](size_t i) { return static_cast<unsigned char>(line[i]); };
  const bool starts = begin == 0 || !std::isalnum(ch(begin - 1)) ||
                      (std::isupper(ch(begin)) && std::islower(ch(begin - 1)));
  const bool ends = end == line.size() || !std::isalnum(ch(end)) || std::isupper(ch(end));
  return starts && ends;
}

bool NamedAt(const std::string& line, const std::regex& pattern) {
  for (auto it = std::sregex_iterator(line.begin(), line.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    const size_t begin = static_cast<size_t>(it->position());
    if (IsWord(line, begin, begin + static_cast<size_t>(it->length()))) return true;
  }
  return false;
}

// The exact lower-case name as a word of its own ('-' belongs to the word).
std::regex ExactWord(const std::string& scheme) {
  std::string body;
  for (char c : scheme)
    body +=
        std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : "\\" + std::string(1, c);
  return std::regex("(^|[^A-Za-z0-9-])" + body + "($|[^A-Za-z0-9-])");
}

}  // namespace

std::vector<std::string> CheckSchemeUnits(const fs::path& root, const Options& o) {
  struct Compiled {
    std::string name;
    std::regex any_case, exact;
  };
  std::vector<Compiled> schemes;
  for (const std::string& s : o.schemes) schemes.push_back({s, NamePattern(s), ExactWord(s)});
  const std::regex plan_file_include("#include\\s+\"planner/plan_file\\.h\"");

  std::vector<std::string> out;
  for (const char* dir : kProgramDirs) {
    if (!fs::is_directory(root / dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (entry.is_regular_file() && IsSourceFile(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      const std::string file = fs::relative(path, root).generic_string();
      // A unit may name its parameters, some of which share a scheme's name (rules 1 and 2
      // still hold there): the list rule is for the rest of the program.
      const bool is_unit = std::any_of(o.schemes.begin(), o.schemes.end(),
                                       [&](const std::string& s) { return file == UnitOf(s); });
      std::ifstream in(path);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const std::string where = file + ":" + std::to_string(n) + ": ";
        int listed = 0;
        bool any_outside = false;
        for (const Compiled& s : schemes) {
          const bool may = MayName(file, s.name, o);
          if (std::regex_search(line, s.exact)) {
            ++listed;
            any_outside = any_outside || !may;
          }
          if (may) continue;
          if (!ListContains(o.common_words, s.name)) {
            if (NamedAt(line, s.any_case)) {
              out.push_back(where + "names the scheme '" + s.name + "' outside its unit (" +
                            UnitOf(s.name) + ") and the registry");
            }
          } else if (!ListContains(o.parameter_keys, s.name) &&
                     line.find('"' + s.name + '"') != std::string::npos) {
            out.push_back(where + "has the scheme name \"" + s.name +
                          "\" as a literal outside its unit (" + UnitOf(s.name) +
                          ") and the registry");
          }
        }
        if (listed >= 3 && any_outside && !is_unit) {
          out.push_back(
              where + "lists " + std::to_string(listed) +
              " schemes: ask the registry (planner::AllSchemes, `meshplan plan --list-schemes`)");
        }
        if (std::regex_search(line, plan_file_include) && file.rfind("tools/", 0) != 0 &&
            file != "planner/plan_file.cc") {
          out.push_back(where + "includes the plan-file reader, which only tools/ may use");
        }
      }
    }
  }
  return out;
}

}  // namespace meshplan::scheme_units
