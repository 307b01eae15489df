// Fuzz target: the tensor file reader (.npy by its magic, else an ONNX TensorProto).
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = systolic::frontend::parse_tensor(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (t.ok() && !t->data.empty()) {
    volatile uint8_t sink = t->data.front() ^ t->data.back();  // the bytes claimed are there
    (void)sink;
  }
  return 0;
}
