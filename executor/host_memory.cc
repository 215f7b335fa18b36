#include "executor/host_memory.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sstream>

#include "core/base/dtype.h"
#include "core/base/units.h"

namespace meshplan::exec {
namespace {

constexpr double kFloatBytes = 4, kDoubleBytes = 8;

// The first number of a file (cgroup files hold one; "max" reads as none).
bool ReadNumber(const std::string& path, double* value) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return false;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (end == word.c_str() || *end != '\0' || !(v >= 0)) return false;
  *value = v;
  return true;
}

}  // namespace

double HostMemoryNeed::PeakBytes() const {
  return std::max({inputs_phase_bytes, run_phase_bytes, check_phase_bytes});
}

double HostRankBytes(const Workload& w, double plan_bytes) {
  return plan_bytes * std::max(1.0, kFloatBytes / static_cast<double>(BytesPerElement(w.dtype)));
}

HostMemoryNeed EstimateHostMemory(const HostMemoryQuestion& q) {
  const Workload& w = q.workload;
  const double tokens = static_cast<double>(w.batch) * static_cast<double>(w.seq_len);
  const double q_elems = tokens * static_cast<double>(w.q_heads) * static_cast<double>(w.head_dim);
  const double kv_elems =
      tokens * static_cast<double>(w.kv_heads) * static_cast<double>(w.head_dim);
  const double lse_elems = tokens * static_cast<double>(w.q_heads);
  const bool backward = HasBackward(w.pass);

  const double float_inputs = kFloatBytes * (q_elems + 2 * kv_elems + (backward ? q_elems : 0));
  const double float_outputs =
      kFloatBytes * (q_elems + lse_elems + (backward ? q_elems + 2 * kv_elems : 0));
  HostMemoryNeed need;
  // Seeded inputs are generated row by row into each rank's shards (part of its working memory);
  // a .npy file is read as float64 values and converted, one file at a time.
  const double held_inputs = q.random_inputs ? 0 : float_inputs;
  need.inputs_phase_bytes = q.random_inputs ? 0 : float_inputs + kDoubleBytes * q_elems;
  need.ranks_bytes = HostRankBytes(w, q.rank_peak_bytes) * static_cast<double>(q.ranks_in_process);
  // One byte per (token, query head) of each of the 5 outputs marks which rank produced it.
  const double coverage = 5 * lse_elems;
  need.run_phase_bytes =
      held_inputs + need.ranks_bytes + coverage + (q.keep_outputs || q.check ? float_outputs : 0);
  if (q.check) {
    // The reference's double copies of q, k, v and its o, lse; with a backward dO, dq, dk, dv.
    const double reference = kDoubleBytes * (2 * q_elems + 2 * kv_elems + lse_elems +
                                             (backward ? 2 * q_elems + 2 * kv_elems : 0));
    need.check_phase_bytes = float_inputs + float_outputs + reference;
  }
  return need;
}

double AvailableHostMemoryBytes() {
  double available = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit) {
      if (key == "MemAvailable:") {
        available = kib * 1024;
        break;
      }
    }
  }
  double limit = 0, used = 0;
  if (ReadNumber("/sys/fs/cgroup/memory.max", &limit) &&
      ReadNumber("/sys/fs/cgroup/memory.current", &used)) {
    const double cgroup = std::max(0.0, limit - used);
    available = available > 0 ? std::min(available, cgroup) : cgroup;
  }
  return available;
}

double PeakResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    double kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return 0;
}

bool ResetPeakResident() {
#if defined(__GLIBC__)
  malloc_trim(0);  // freed heap memory back to the system, so the new peak is the next work's
#endif
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

Status CheckHostMemory(const HostMemoryNeed& need, const HostMemoryQuestion& q, double limit_bytes,
                       const std::string& limit_source) {
  const double peak = need.PeakBytes();
  if (!(limit_bytes > 0) || peak <= limit_bytes) return Status::Ok();
  std::ostringstream m;
  m << "execute: this run needs about " << FormatBytes(peak) << " of host memory in this process (";
  if (!q.random_inputs)
    m << "inputs " << FormatBytes(need.inputs_phase_bytes) << " while the .npy files are read; ";
  m << "run " << FormatBytes(need.run_phase_bytes) << ", of which " << q.ranks_in_process << " rank"
    << (q.ranks_in_process == 1 ? "" : "s") << " " << FormatBytes(need.ranks_bytes);
  if (q.check) m << "; --check " << FormatBytes(need.check_phase_bytes);
  m << ") but " << FormatBytes(limit_bytes) << " is available (" << limit_source << ")";
  // Every phase grows in proportion to the sequence (per-rank memory with S / P), so the length
  // that fits scales with limit / need; rounded down to a multiple of 1K.
  const double fit = static_cast<double>(q.workload.seq_len) * limit_bytes / peak;
  const int64_t fit_tokens = static_cast<int64_t>(std::floor(fit / 1024)) * 1024;
  if (fit_tokens >= 1024) {
    m << "; a plan of about " << FormatCount(fit_tokens) << " tokens or fewer would fit";
  } else {
    m << "; even 1K tokens would not fit";
  }
  m << " (--max-memory overrides the limit)";
  return Status::Invalid(m.str());
}

}  // namespace meshplan::exec
