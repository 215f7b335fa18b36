// The inputs and outputs of a run as files and seeds: q.npy, k.npy, v.npy ([B,S,Hq,d],
// [B,S,Hkv,d]) and d_o.npy for a backward in; o.npy, lse.npy ([B,S,Hq]), dq.npy, dk.npy, dv.npy
// out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/workload/workload.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// Reads the inputs of `w` from `dir`; every problem with a file is the user's (kInvalidInput or
// kNotFound), naming the file.
Result<AttentionTensors<float>> ReadInputFiles(const std::string& dir, const Workload& w);

// Writes the outputs the pass produced into `dir` (created when missing), as a set: each file
// is written to a temporary file and renamed into place, and every file already in place stays
// registered for removal on a signal (core/base/temp_files.h) until the last one is, so a failure
// or a SIGINT, SIGTERM or SIGHUP while writing leaves none of them: the complete set or nothing (a
// SIGKILL can still leave part of it). Returns the file names. `after_file` (testing; may be
// empty) is called after each file is in place.
Result<std::vector<std::string>> WriteOutputFiles(
    const std::string& dir, const Workload& w, const AttentionTensors<float>& out,
    const std::function<void(const std::string& name)>& after_file = {});

// The names of every output file a run may write (o.npy, lse.npy, dq.npy, dk.npy, dv.npy).
const std::vector<std::string>& OutputFileNames();

// Removes from `dir` the output files (OutputFileNames) an earlier run left there, so that after
// a failed run the directory holds no outputs that look like this run's. Returns the names it
// removed; files it cannot remove are left (nothing else is touched).
std::vector<std::string> RemoveStaleOutputFiles(const std::string& dir);

}  // namespace meshplan::exec
