// Fuzz target: a served model's config.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)systolic::serve::model_config_from_text(std::string(reinterpret_cast<const char*>(data), size),
                                                "/models/m/config.json");
  return 0;
}
