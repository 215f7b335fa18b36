#include "executor/io/run_files.h"

#include <filesystem>
#include <memory>

#include "core/base/temp_files.h"
#include "executor/io/npy.h"

namespace meshplan::exec {
namespace {

namespace fs = std::filesystem;

TensorF FromNpy(const NpyArray& array) {
  TensorF t(array.shape[0], array.shape[1], array.shape[2], array.shape[3]);
  for (size_t i = 0; i < array.values.size(); ++i) t.data[i] = static_cast<float>(array.values[i]);
  return t;
}

}  // namespace

Result<AttentionTensors<float>> ReadInputFiles(const std::string& dir, const Workload& w) {
  AttentionTensors<float> in;
  const std::vector<int64_t> q_shape = {w.batch, w.seq_len, w.q_heads, w.head_dim};
  const std::vector<int64_t> kv_shape = {w.batch, w.seq_len, w.kv_heads, w.head_dim};
  struct File {
    const char* name;
    const std::vector<int64_t>* shape;
    TensorF* tensor;
  };
  std::vector<File> files = {
      {"q.npy", &q_shape, &in.q}, {"k.npy", &kv_shape, &in.k}, {"v.npy", &kv_shape, &in.v}};
  if (HasBackward(w.pass)) files.push_back({"d_o.npy", &q_shape, &in.d_o});
  for (const File& f : files) {
    auto array = ReadNpyWithShape((fs::path(dir) / f.name).string(), *f.shape);
    if (!array.ok()) {
      // Every problem with an input file is the user's to fix (exit 2), I/O errors included.
      return array.status().code() == ErrorCode::kNotFound
                 ? array.status()
                 : Status::Invalid(array.status().message());
    }
    *f.tensor = FromNpy(*array);
  }
  return in;
}

Result<std::vector<std::string>> WriteOutputFiles(
    const std::string& dir, const Workload& w, const AttentionTensors<float>& out,
    const std::function<void(const std::string& name)>& after_file) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error)
    return Status::Io(dir + ": cannot create the output directory (" + error.message() + ")");
  struct File {
    const char* name;
    std::vector<int64_t> shape;
    const TensorF* tensor;
  };
  const std::vector<int64_t> q_shape = {w.batch, w.seq_len, w.q_heads, w.head_dim};
  const std::vector<int64_t> kv_shape = {w.batch, w.seq_len, w.kv_heads, w.head_dim};
  std::vector<File> files;
  if (HasForward(w.pass)) {
    files.push_back({"o.npy", q_shape, &out.o});
    files.push_back({"lse.npy", {w.batch, w.seq_len, w.q_heads}, &out.lse});
  }
  if (HasBackward(w.pass)) {
    files.push_back({"dq.npy", q_shape, &out.dq});
    files.push_back({"dk.npy", kv_shape, &out.dk});
    files.push_back({"dv.npy", kv_shape, &out.dv});
  }
  std::vector<std::string> written;
  // The files in place so far, removed by a signal until the set is complete.
  std::vector<std::unique_ptr<TempFileRegistration>> until_complete;
  for (const File& f : files) {
    const std::string path = (fs::path(dir) / f.name).string();
    // Registered before the rename, so that no moment leaves it in place unregistered.
    until_complete.push_back(std::make_unique<TempFileRegistration>(path));
    if (Status st = WriteNpyFloat32(path, f.shape, f.tensor->data); !st.ok()) {
      for (const std::string& name : written) fs::remove(fs::path(dir) / name, error);
      return st.code() == ErrorCode::kInvalidInput ? Status::Io(st.message()) : st;
    }
    written.push_back(f.name);
    if (after_file) after_file(f.name);
  }
  return written;
}

const std::vector<std::string>& OutputFileNames() {
  static const std::vector<std::string> names = {"o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy"};
  return names;
}

std::vector<std::string> RemoveStaleOutputFiles(const std::string& dir) {
  std::vector<std::string> removed;
  for (const std::string& name : OutputFileNames()) {
    const fs::path path = fs::path(dir) / name;
    std::error_code error;
    const fs::file_type type = fs::symlink_status(path, error).type();
    if (type != fs::file_type::regular && type != fs::file_type::symlink) continue;
    if (fs::remove(path, error)) removed.push_back(name);
  }
  return removed;
}

}  // namespace meshplan::exec
