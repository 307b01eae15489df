// Fuzz target: the hardware target JSON reader, then writing the target back and reading that.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "target/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic::target;
  auto t = target_from_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!t.ok()) return 0;
  // What was accepted must survive its own round trip.
  const std::string again = target_to_json(*t);
  auto back = target_from_json_text(again, "round trip");
  if (!back.ok()) {
    std::fprintf(stderr, "accepted, but its own JSON is refused: %s\n%s\n", back.status().message().c_str(), again.c_str());
    __builtin_trap();
  }
  return 0;
}
