// The inputs and outputs of a run as files and seeds: q.npy, k.npy, v.npy ([B,S,Hq,d],
// [B,S,Hkv,d]) and d_o.npy for a backward in; o.npy, lse.npy ([B,S,Hq]), dq.npy, dk.npy, dv.npy
// out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/workload.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// Reads the inputs of `w` from `dir`; every problem with a file is the user's (kInvalidInput or
// kNotFound), naming the file.
Result<AttentionTensors<float>> ReadInputFiles(const std::string& dir, const Workload& w);

// Writes the outputs the pass produced into `dir` (created when missing). On failure removes the
// files this call wrote, so a failed run leaves no output files. Returns the file names.
Result<std::vector<std::string>> WriteOutputFiles(const std::string& dir, const Workload& w,
                                                  const AttentionTensors<float>& out);

// The names of every output file a run may write (o.npy, lse.npy, dq.npy, dk.npy, dv.npy).
const std::vector<std::string>& OutputFileNames();

// Removes from `dir` the output files (OutputFileNames) an earlier run left there, so that after
// a failed run the directory holds no outputs that look like this run's. Returns the names it
// removed; files it cannot remove are left (nothing else is touched).
std::vector<std::string> RemoveStaleOutputFiles(const std::string& dir);

}  // namespace meshplan::exec
