// Host memory preflight of a CPU execute: what one process will hold, estimated from the plan
// before anything is allocated, against what the machine (or --max-memory) allows.
//
// A process holds, one phase after another (docs/executor.md, "Memory"):
//   inputs:    seeded random inputs: nothing (each rank generates its own rows, executor/
//              input_source.h); .npy inputs: the float tensors q, k, v (and dO with a backward),
//              and one file's values as float64 while it is converted;
//   run:       the .npy inputs' floats, the ranks' working memory (the planner's peak per rank,
//              in fp32, times the ranks in this process), the output coverage marks (a byte per
//              token, query head and output) and, when the outputs are kept (--check,
//              --outputs), the gathered float outputs;
//   check:     the whole float inputs and outputs, and the float64 reference's copies of the
//              inputs and its outputs.
// The need is the largest phase.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/workload/workload.h"

namespace meshplan::exec {

struct HostMemoryNeed {
  double inputs_phase_bytes = 0;
  double run_phase_bytes = 0;
  double check_phase_bytes = 0;
  double ranks_bytes = 0;  // part of the run phase: the ranks' working memory
  double PeakBytes() const;
};

struct HostMemoryQuestion {
  Workload workload;             // as run (fp32 on the CPU whatever its dtype)
  double rank_peak_bytes = 0;    // the planner's peak memory per rank, in the plan's dtype
  int64_t ranks_in_process = 1;  // every rank with threads, one under MPI
  bool random_inputs = true;     // false: read from .npy files
  bool keep_outputs = true;      // the run copies out the global outputs (--check, --outputs)
  bool check = false;            // --check: the float64 reference
};

HostMemoryNeed EstimateHostMemory(const HostMemoryQuestion& q);

// The planner's per-rank memory (`plan_bytes`, in w.dtype) as the CPU executor holds it: every
// tensor in fp32, so a 16-bit plan's bytes double.
double HostRankBytes(const Workload& w, double plan_bytes);

// Memory this process may still use: the smaller of MemAvailable (/proc/meminfo) and the cgroup
// v2 limit less its usage (/sys/fs/cgroup/memory.max, memory.current); 0 when neither is known.
double AvailableHostMemoryBytes();

// This process's peak resident set so far (VmHWM of /proc/self/status), in bytes; 0 when unknown.
double PeakResidentBytes();
// Starts a new peak: PeakResidentBytes() then reports the peak since this call (glibc's freed heap
// memory is returned to the system first, then "5" goes to /proc/self/clear_refs). False where
// the kernel does not allow it: the peak stays the process's.
bool ResetPeakResident();

// Ok when the need fits `limit_bytes`; otherwise kInvalidInput, one line naming the need by
// phase, the limit and where it came from (`limit_source`), and a sequence length that would fit.
Status CheckHostMemory(const HostMemoryNeed& need, const HostMemoryQuestion& q, double limit_bytes,
                       const std::string& limit_source);

}  // namespace meshplan::exec
