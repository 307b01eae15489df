// `systolic zoo NAME -o FILE.onnx [--seed N]`: writes a built-in model as ONNX.
#include <onnx/onnx_pb.h>

#include <fstream>

#include "tools/commands.h"
#include "tools/zoo/zoo.h"

namespace systolic::tools {

void register_zoo(CLI::App& app) {
  auto* cmd = app.add_subcommand("zoo", "write a built-in model (torchvision architecture) as ONNX");
  auto name = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto seed = std::make_shared<uint64_t>(0);
  std::string names;
  for (const auto& n : zoo::zoo_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("name", *name, "model: " + names)->required();
  cmd->add_option("-o,--output", *out, "output .onnx file")->required();
  cmd->add_option("--seed", *seed, "weight seed (default 0)");
  cmd->callback([=] {
    onnx::ModelProto m;
    Status st = zoo::zoo_build(*name, *seed, &m);
    if (!st.ok()) return fail(st);
    std::ofstream f(*out, std::ios::binary | std::ios::trunc);
    if (!f || !m.SerializeToOstream(&f)) return fail(Err("cannot write %s", out->c_str()));
    std::printf("wrote %s (%s, seed %llu, %d nodes)\n", out->c_str(), name->c_str(),
                static_cast<unsigned long long>(*seed), m.graph().node_size());
  });
}

}  // namespace systolic::tools
