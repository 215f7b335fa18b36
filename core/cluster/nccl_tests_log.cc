#include "core/cluster/nccl_tests_log.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

namespace meshplan {
namespace {

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A finite number spelled wholly by `text`.
bool Number(const std::string& text, double* value) {
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && std::isfinite(*value);
}

}  // namespace

Result<NcclTestsResult> ParseNcclTestsLog(std::string_view text, const std::string& source) {
  NcclTestsResult out;
  std::set<std::string> hosts;
  std::vector<size_t> busbw_columns;  // indices into a row's words
  size_t columns = 0;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number);
    std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    if (words[0] == "#") words.erase(words.begin());
    if (words.empty()) continue;
    if (line.find("_perf") != std::string::npos && out.collective.empty()) {
      for (const std::string& w : words) {
        const size_t at = w.find("_perf");
        if (at != std::string::npos) {
          out.collective = w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
          break;
        }
      }
    }
    if (line[0] == '#') {
      // "#  Rank  0 Group  0 Pid 1234 on node-01 device  0 [0x18] NVIDIA H100 80GB HBM3"
      if (words.size() >= 9 && words[0] == "Rank" && words[6] == "on") {
        ++out.ranks;
        hosts.insert(words[7]);
        if (words[1] == "0" && words.size() > 11) {
          for (size_t i = 11; i < words.size(); ++i) out.device += (i > 11 ? " " : "") + words[i];
        }
      }
      // The column header: the first with "size" and "busbw".
      if (busbw_columns.empty() && words[0] == "size") {
        for (size_t i = 0; i < words.size(); ++i) {
          if (words[i] == "busbw") busbw_columns.push_back(i);
        }
        columns = words.size();
      }
      continue;
    }
    if (busbw_columns.empty()) continue;
    double size = 0;
    if (!Number(words[0], &size)) continue;  // not a result row
    // A message size is a whole number of bytes; 2^53 is far beyond any nccl-tests run and keeps
    // the conversion to bytes exact (a fuzzed 1e41 was undefined behaviour).
    if (!(size >= 0 && size <= 9007199254740992.0 && size == std::floor(size))) {
      return Status::Invalid(where + ": size '" + words[0] + "' is not a whole number of bytes");
    }
    if (words.size() < columns) {
      return Status::Invalid(where + ": a result row with " + std::to_string(words.size()) +
                             " columns, the header has " + std::to_string(columns));
    }
    for (size_t column : busbw_columns) {
      double busbw = 0;
      if (!Number(words[column], &busbw) || busbw < 0) {
        return Status::Invalid(where + ": busbw '" + words[column] +
                               "' is not a finite number >= 0");
      }
      if (busbw > out.peak_busbw_GBps) {
        out.peak_busbw_GBps = busbw;
        out.peak_bytes = static_cast<int64_t>(size);
      }
    }
    ++out.rows;
  }
  if (out.rows == 0) {
    return Status::Invalid(source +
                           ": no nccl-tests result rows (a '# size ... busbw' header and rows of "
                           "numbers under it, as all_reduce_perf prints)");
  }
  out.hosts = static_cast<int64_t>(hosts.size());
  return out;
}

double LevelBandwidthFromBusbw(const NetworkLevel& level, const NcclTestsResult& measured) {
  const double busbw = measured.peak_busbw_GBps * 1e9;
  if (level.kind != LinkKind::kFullMesh) return busbw;
  const int64_t ranks =
      measured.ranks > 0 ? std::min(measured.ranks, level.group_size) : level.group_size;
  return busbw / static_cast<double>(std::max<int64_t>(1, ranks - 1));
}

}  // namespace meshplan
