// Packing of entries into transport messages (vector<float> payloads; integers are carried
// bit-for-bit, so positions and ids survive exactly).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "executor/shard_store.h"

namespace meshplan::exec {

struct Piece {
  uint16_t tensor = 0;
  int32_t id = 0;
  Entry entry;
};

std::vector<float> Pack(const std::vector<const Piece*>& pieces);
Result<std::vector<Piece>> Unpack(const std::vector<float>& payload);

}  // namespace meshplan::exec
