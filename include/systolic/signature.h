// An ONNX model's interface as its file declares it, read without compiling: what ONNX
// Runtime's get_inputs(), get_outputs() and get_modelmeta() report (symbolic dims by name),
// for shells that present a model as ONNX Runtime would (the Python module).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "systolic/systolic.h"

namespace systolic {

struct DeclaredTensor {
  std::string name;
  DType dtype = DType::undefined;
  bool shape_known = false;             // the file gives a shape (else the rank is unknown too)
  std::vector<int64_t> shape;           // -1 where the dim is symbolic or unknown
  std::vector<std::string> dim_params;  // a symbolic dim's name, "" elsewhere
};

struct ModelSignature {
  std::vector<DeclaredTensor> inputs;  // graph inputs without an initializer, in file order
  std::vector<DeclaredTensor> outputs;
  std::string producer_name, producer_version, domain, doc_string, graph_name, graph_doc_string;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata;  // metadata_props
};

// Errors as Model::open words them for the same file (cannot open, not a valid ONNX model).
Expected<ModelSignature> read_signature(const std::string& onnx_path);

}  // namespace systolic
