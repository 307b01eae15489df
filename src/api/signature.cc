// read_signature: the graph's declared inputs, outputs and model metadata from the ModelProto.
#include "systolic/signature.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <sstream>

namespace systolic {
namespace {

DeclaredTensor declared(const onnx::ValueInfoProto& vi) {
  DeclaredTensor t;
  t.name = vi.name();
  if (!vi.type().has_tensor_type()) return t;
  const auto& tt = vi.type().tensor_type();
  t.dtype = static_cast<DType>(tt.elem_type());
  t.shape_known = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    t.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    t.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return t;
}

}  // namespace

Expected<ModelSignature> read_signature(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Err("cannot open model file %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  onnx::ModelProto m;
  if (bytes.empty()) return Err("%s: model is empty", path.c_str());
  if (!m.ParseFromString(bytes))
    return Err("%s: not a valid ONNX model (protobuf parse failed; truncated or not an .onnx file?)", path.c_str());
  if (!m.has_graph() || m.graph().node_size() == 0)
    return Err("%s: not a valid ONNX model (no graph or no nodes)", path.c_str());
  const onnx::GraphProto& g = m.graph();
  ModelSignature s;
  std::map<std::string, bool> init;
  for (const auto& t : g.initializer()) init[t.name()] = true;
  for (const auto& vi : g.input())
    if (!init.count(vi.name())) s.inputs.push_back(declared(vi));
  for (const auto& vi : g.output()) s.outputs.push_back(declared(vi));
  s.producer_name = m.producer_name();
  s.producer_version = m.producer_version();
  s.domain = m.domain();
  s.doc_string = m.doc_string();
  s.model_version = m.model_version();
  s.graph_name = g.name();
  s.graph_doc_string = g.doc_string();
  for (const auto& p : m.metadata_props()) s.metadata[p.key()] = p.value();
  return s;
}

}  // namespace systolic
