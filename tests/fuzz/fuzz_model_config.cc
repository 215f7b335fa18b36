// Model configs (core/workload/model_config.h): any bytes give a model or one error line, and a
// model that parses is one meshplan can plan (positive sizes, KV heads dividing the heads, no more
// sliding layers than layers).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/workload/model_config.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto model = meshplan::ParseModelConfig(text, "fuzz.json");
  if (!model.ok()) {
    meshplan::fuzz::CheckOneLine(model.status());
    return 0;
  }
  meshplan::fuzz::Check(
      model->q_heads > 0 && model->kv_heads > 0 && model->head_dim > 0 && model->layers > 0,
      "a model with a size that is not positive");
  meshplan::fuzz::Check(model->q_heads % model->kv_heads == 0, "KV heads do not divide the heads");
  meshplan::fuzz::Check(model->window_layers >= 0 && model->window_layers <= model->layers,
                        "more sliding layers than layers");
  meshplan::fuzz::Check(model->window_layers == 0 || model->window > 0,
                        "sliding layers without a window");
  return 0;
}
