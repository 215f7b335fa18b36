// NumPy .npy files (format version 1.0/2.0, little-endian float32 or float64, C order), so
// inputs and outputs can be checked with any tool.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<double> values;  // converted to double on read
};

// Reads a .npy file. Errors (one line, naming the file): missing, bad magic, unsupported
// version or dtype, Fortran order, truncated data, header/shape mismatch.
Result<NpyArray> ReadNpy(const std::string& path);
// The same for the bytes of a .npy file; `source` names it in errors.
Result<NpyArray> ParseNpy(std::string_view bytes, const std::string& source);
// Reads a .npy and checks its shape equals `expected` (error names file, expected and found).
Result<NpyArray> ReadNpyWithShape(const std::string& path, const std::vector<int64_t>& expected);
// Writes float32 data with the given shape atomically (temp file + rename).
Status WriteNpyFloat32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& values);

}  // namespace meshplan::exec
