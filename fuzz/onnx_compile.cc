// Fuzz target: the ONNX importer followed by compile (optimized, the precision the model asks
// for). Any bytes must either compile or give an error; external data resolves against a
// directory holding one small file, so offsets and lengths past it are exercised.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "frontend/onnx/import.h"
#include "plan/program.h"

namespace {
std::string g_dir;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_dir = "/tmp/systolic-fuzz-external";
  std::filesystem::create_directories(g_dir);
  std::ofstream f(g_dir + "/weights.bin", std::ios::binary);
  for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(i * 7));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic;
  auto g = frontend::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), g_dir);
  if (!g.ok()) return 0;
  plan::CompileOptions o;
  o.precision_auto = true;  // QDQ seeds compile in int8
  auto p = plan::compile(std::move(*g), o);
  return 0;
}
