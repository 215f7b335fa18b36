#include "executor/messages.h"

#include <cstring>

namespace meshplan::exec {
namespace {

void PutInt(std::vector<float>& out, int64_t value) {
  float words[2];
  static_assert(sizeof(words) == sizeof(value));
  std::memcpy(words, &value, sizeof value);
  out.push_back(words[0]);
  out.push_back(words[1]);
}

bool GetInt(const std::vector<float>& in, size_t& at, int64_t* value) {
  if (at + 2 > in.size()) return false;
  std::memcpy(value, &in[at], sizeof *value);
  at += 2;
  return true;
}

}  // namespace

std::vector<float> Pack(const std::vector<const Piece*>& pieces) {
  size_t size = 2;
  for (const Piece* p : pieces) size += 14 + 2 * p->entry.positions.size() + p->entry.data.size();
  std::vector<float> out;
  out.reserve(size);
  PutInt(out, static_cast<int64_t>(pieces.size()));
  for (const Piece* p : pieces) {
    const Entry& e = p->entry;
    PutInt(out, p->tensor);
    PutInt(out, p->id);
    PutInt(out, e.batch);
    PutInt(out, e.rows());
    PutInt(out, e.head_begin);
    PutInt(out, e.heads);
    PutInt(out, e.dim);
    for (int64_t pos : e.positions) PutInt(out, pos);
    out.insert(out.end(), e.data.begin(), e.data.end());
  }
  return out;
}

Result<std::vector<Piece>> Unpack(const std::vector<float>& in) {
  size_t at = 0;
  int64_t count = 0;
  if (!GetInt(in, at, &count) || count < 0) return Status::Internal("malformed message: no piece count");
  std::vector<Piece> pieces(static_cast<size_t>(count));
  for (Piece& p : pieces) {
    int64_t tensor, id, batch, rows, head_begin, heads, dim;
    if (!GetInt(in, at, &tensor) || !GetInt(in, at, &id) || !GetInt(in, at, &batch) || !GetInt(in, at, &rows) ||
        !GetInt(in, at, &head_begin) || !GetInt(in, at, &heads) || !GetInt(in, at, &dim) || rows < 0 ||
        heads < 0 || dim < 0 || batch < 0) {
      return Status::Internal("malformed message: truncated piece header");
    }
    p.tensor = static_cast<uint16_t>(tensor);
    p.id = static_cast<int32_t>(id);
    Entry& e = p.entry;
    e.batch = batch;
    e.head_begin = static_cast<int32_t>(head_begin);
    e.heads = static_cast<int32_t>(heads);
    e.dim = static_cast<int32_t>(dim);
    e.positions.resize(static_cast<size_t>(rows));
    for (int64_t& pos : e.positions) {
      if (!GetInt(in, at, &pos)) return Status::Internal("malformed message: truncated positions");
    }
    const size_t n = static_cast<size_t>(batch * rows * heads * dim);
    if (at + n > in.size()) return Status::Internal("malformed message: truncated data");
    e.data.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return pieces;
}

}  // namespace meshplan::exec
