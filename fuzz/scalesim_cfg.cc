// Fuzz target: the SCALE-Sim .cfg reader (a hardware target from its INI text).
#include <cstddef>
#include <cstdint>
#include <string>

#include "target/scalesim_cfg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)systolic::target::target_from_scalesim_cfg_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
