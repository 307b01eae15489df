// read_signature(): an .onnx file's declared interface and metadata, for the ONNX Runtime
// surface's get_inputs(), get_outputs() and get_modelmeta().
#include <pybind11/stl.h>

#include "errors.h"
#include "systolic/signature.h"
#include "tensors.h"

namespace systolic::py {
namespace {

namespace pyb = pybind11;

pyb::dict declared(const DeclaredTensor& t) {
  pyb::dict d;
  d["name"] = t.name;
  d["dtype"] = t.dtype == DType::undefined ? pyb::none() : pyb::object(numpy_dtype(t.dtype));
  d["onnx_type"] = static_cast<int>(t.dtype);
  if (!t.shape_known) {
    d["shape"] = pyb::none();
    return d;
  }
  pyb::list shape;
  for (std::size_t k = 0; k < t.shape.size(); ++k) {
    if (t.shape[k] >= 0) shape.append(t.shape[k]);
    else if (!t.dim_params[k].empty()) shape.append(t.dim_params[k]);
    else shape.append(pyb::none());
  }
  d["shape"] = shape;
  return d;
}

}  // namespace

void register_signature(pyb::module_& m) {
  m.def(
      "read_signature",
      [](const std::string& path) {
        Expected<ModelSignature> r = Status::Error("not read");
        {
          pyb::gil_scoped_release nogil;
          r = read_signature(path);
        }
        if (!r.ok()) raise(open_error_kind(path, r.status()), r.status().message());
        const ModelSignature& s = *r;
        pyb::dict d;
        pyb::list ins, outs;
        for (const auto& t : s.inputs) ins.append(declared(t));
        for (const auto& t : s.outputs) outs.append(declared(t));
        d["inputs"] = ins;
        d["outputs"] = outs;
        d["producer_name"] = s.producer_name;
        d["producer_version"] = s.producer_version;
        d["domain"] = s.domain;
        d["doc_string"] = s.doc_string;
        d["graph_name"] = s.graph_name;
        d["graph_doc_string"] = s.graph_doc_string;
        d["model_version"] = s.model_version;
        d["metadata"] = s.metadata;
        return d;
      },
      pyb::arg("path"), "an .onnx file's declared inputs, outputs (symbolic dims by name) and metadata");
}

}  // namespace systolic::py
