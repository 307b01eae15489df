// Fuzz target: the SCALE-Sim topology CSV reader, then the simulation of what it read on a
// preset array (sizes and strides from the file reach the cost model).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/scalesim.h"
#include "target/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic;
  auto layers = sim::parse_topology_csv_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!layers.ok()) return 0;
  static const auto target = target::builtin_preset("tpu-v1");
  if (!target.ok()) __builtin_trap();
  sim::SimOptions o;
  o.precision = "int8";
  (void)sim::simulate_topology(*layers, *target, o);
  return 0;
}
