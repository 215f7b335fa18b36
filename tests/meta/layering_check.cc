#include "tests/meta/layering_check.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace meshplan::layering {
namespace {

namespace fs = std::filesystem;

bool IsSource(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh";
}

bool IsCMakeLists(const fs::path& path) { return path.filename() == "CMakeLists.txt"; }

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Files below `dir` for which `keep` holds, sorted so that messages come in a stable order.
std::vector<fs::path> FilesBelow(const fs::path& dir, bool (*keep)(const fs::path&)) {
  std::vector<fs::path> out;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file() && keep(it->path())) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "nothing" : out;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// What one part's files include and what its CMakeLists define and link.
struct PartFacts {
  std::map<std::string, std::string> included;  // other part -> first "file:line" that includes it
  std::map<std::string, std::string> linked;  // meshplan_* library -> the CMakeLists.txt linking it
};

class Checker {
 public:
  Checker(const fs::path& root, const Rules& rules) : root_(root), rules_(rules) {
    for (const Part& part : rules.parts) parts_[part.name] = &part;
  }

  Report Run() {
    CheckTopLevelDirs();
    CheckFolders();
    for (const Part& part : rules_.parts) {
      ReadIncludes(part);
      ReadCMakeLists(part);
    }
    for (const Part& part : rules_.parts) CheckLinksAreIncluded(part);
    for (const Part& part : rules_.parts) CheckIncludesAreLinked(part);
    for (const Part& part : rules_.parts) {
      report_.includes += part.name + "/ includes:";
      for (const auto& [other, where] : facts_[part.name].included)
        report_.includes += " " + other + " (" + where + ")";
      report_.includes += "\n";
    }
    return std::move(report_);
  }

 private:
  bool IsFree(const std::string& dir) const { return Contains(rules_.free_dirs, dir); }
  std::string Relative(const fs::path& path) const { return fs::relative(path, root_).string(); }

  // Rule 4.
  void CheckTopLevelDirs() {
    std::error_code error;
    std::vector<fs::path> dirs;
    for (const fs::directory_entry& entry : fs::directory_iterator(root_, error)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name[0] != '.' && name.rfind("build", 0) != 0)
        dirs.push_back(entry.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      const std::string name = dir.filename().string();
      if (parts_.count(name) == 0 && !IsFree(name) && !FilesBelow(dir, IsSource).empty()) {
        report_.violations.push_back(name +
                                     "/ holds C++ sources but is no part of the layering rules");
      }
    }
  }

  // Rule 5.
  void CheckFolders() {
    std::set<std::string> listed, parts_with_folders;
    for (const Folder& folder : rules_.folders) {
      listed.insert(folder.path);
      parts_with_folders.insert(PartOf(folder.path));
    }
    for (const std::string& part : parts_with_folders) {
      std::error_code error;
      std::vector<fs::path> dirs;
      for (const fs::directory_entry& entry : fs::directory_iterator(root_ / part, error)) {
        if (entry.is_directory()) dirs.push_back(entry.path());
      }
      std::sort(dirs.begin(), dirs.end());
      for (const fs::path& dir : dirs) {
        const std::string path = part + "/" + dir.filename().string();
        if (listed.count(path) == 0 && !FilesBelow(dir, IsSource).empty()) {
          report_.violations.push_back(path + "/ holds C++ sources but has no folder rule");
        }
      }
    }
    static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
    for (const Folder& folder : rules_.folders) {
      const std::string part = PartOf(folder.path);
      for (const fs::path& file : FilesBelow(root_ / folder.path, IsSource)) {
        std::ifstream in(file);
        std::string line;
        for (int number = 1; std::getline(in, line); ++number) {
          std::smatch match;
          if (!std::regex_search(line, match, include_line)) continue;
          const std::string header = match[1];
          if (header.rfind(part + "/", 0) != 0 || FolderAllows(folder, part, header)) continue;
          report_.violations.push_back(Relative(file) + ":" + std::to_string(number) + ": " +
                                       line.substr(line.find('#')) + ": " + folder.path +
                                       "/ may include of " + part + "/ only " +
                                       Join(folder.may_include) + " (and itself)");
        }
      }
    }
  }

  static std::string PartOf(const std::string& path) { return path.substr(0, path.find('/')); }

  // Whether `header` lies in `dir`: below it, or directly in it when `top_only`.
  static bool InDir(const std::string& header, const std::string& dir, bool top_only) {
    if (header.rfind(dir + "/", 0) != 0) return false;
    return !top_only || header.find('/', dir.size() + 1) == std::string::npos;
  }

  static bool FolderAllows(const Folder& folder, const std::string& part,
                           const std::string& header) {
    if (InDir(header, folder.path, false)) return true;
    for (const std::string& dir : folder.may_include) {
      if (InDir(header, dir, dir == part)) return true;
    }
    return false;
  }

  // Rule 1, and the facts for rule 3.
  void ReadIncludes(const Part& part) {
    static const std::regex include_line(R"(^\s*#\s*include\s*"([^"/]+)/[^"]*")");
    for (const fs::path& file : FilesBelow(root_ / part.name, IsSource)) {
      std::ifstream in(file);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch match;
        if (!std::regex_search(line, match, include_line)) continue;
        const std::string target = match[1];
        if (target == part.name || (parts_.count(target) == 0 && !IsFree(target)))
          continue;  // not another part
        const std::string where = Relative(file) + ":" + std::to_string(number);
        facts_[part.name].included.emplace(target, where);
        if (!Contains(part.may_include, target)) {
          report_.violations.push_back(where + ": " + line.substr(line.find('#')) + ": " +
                                       part.name + "/ may include only " + Join(part.may_include) +
                                       " (and itself)");
        }
      }
    }
  }

  void ReadCMakeLists(const Part& part) {
    static const std::regex call(
        R"((add_library|add_executable|target_link_libraries)\s*\(([^)]*)\))");
    static const std::regex library(R"(meshplan_[A-Za-z0-9_]+)");
    for (const fs::path& cmake : FilesBelow(root_ / part.name, IsCMakeLists)) {
      const std::string text = ReadAll(cmake);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), call);
           it != std::sregex_iterator(); ++it) {
        std::istringstream words((*it)[2].str());
        std::string first, word;
        words >> first;
        if ((*it)[1] != "target_link_libraries") {
          if (std::regex_match(first, library)) library_part_[first] = part.name;
          continue;
        }
        while (words >> word) {
          if (std::regex_match(word, library))
            facts_[part.name].linked.emplace(word, Relative(cmake));
        }
      }
    }
  }

  // Rule 2, and the part-to-part links for rule 3.
  void CheckLinksAreIncluded(const Part& part) {
    PartFacts& f = facts_[part.name];
    for (const auto& [library, cmake] : f.linked) {
      const auto owner = library_part_.find(library);
      if (owner == library_part_.end()) {
        report_.violations.push_back(cmake + ": links " + library + ", which no part defines");
        continue;
      }
      if (owner->second == part.name) continue;
      links_[part.name].insert(owner->second);
      if (f.included.count(owner->second) != 0) continue;
      report_.violations.push_back(cmake + ": links " + library + ", but no file of " + part.name +
                                   "/ includes a " + owner->second +
                                   "/ header (link only what the part includes)");
    }
  }

  // Rule 3.
  void CheckIncludesAreLinked(const Part& part) {
    std::set<std::string> reachable;
    std::vector<std::string> stack(links_[part.name].begin(), links_[part.name].end());
    while (!stack.empty()) {
      const std::string next = stack.back();
      stack.pop_back();
      if (!reachable.insert(next).second) continue;
      stack.insert(stack.end(), links_[next].begin(), links_[next].end());
    }
    for (const auto& [included, where] : facts_[part.name].included) {
      if (IsFree(included) || reachable.count(included) != 0) continue;
      report_.violations.push_back(
          where + ": includes a " + included + "/ header, but no CMakeLists.txt of " + part.name +
          "/ links a library of " + included + "/, directly or through another part");
    }
  }

  const fs::path root_;
  const Rules& rules_;
  std::map<std::string, const Part*> parts_;
  std::map<std::string, PartFacts> facts_;
  std::map<std::string, std::string> library_part_;  // meshplan_* library -> the part defining it
  std::map<std::string, std::set<std::string>> links_;  // part -> the other parts it links directly
  Report report_;
};

}  // namespace

Report CheckLayering(const fs::path& root, const Rules& rules) {
  return Checker(root, rules).Run();
}

}  // namespace meshplan::layering
