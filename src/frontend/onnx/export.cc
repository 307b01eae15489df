// IR graph -> ONNX ModelProto (the inverse of import for the importer's opset-13 form).
#include "frontend/onnx/export.h"

#include <set>

#include "frontend/onnx/tensor_proto.h"

namespace systolic::frontend {
namespace {

// Attributes the importer adds or the passes attach; none of them is ONNX's.
bool internal_attr(const std::string& k) {
  static const std::set<std::string> kInternal = {"axes_as_input", "kernel", "conv_params", "act", "act_a", "act_b",
                                                  "src_u8", "src_offset", "out_nhwc", "to"};
  return kInternal.count(k) || k.rfind("q_", 0) == 0 || k.rfind("_", 0) == 0;
}

Status write_attr(const std::string& k, const ir::Attr& a, onnx::AttributeProto* ap) {
  ap->set_name(k);
  switch (a.kind) {
    case ir::Attr::i: ap->set_type(onnx::AttributeProto::INT); ap->set_i(a.int_v); break;
    case ir::Attr::f: ap->set_type(onnx::AttributeProto::FLOAT); ap->set_f(a.float_v); break;
    case ir::Attr::s: ap->set_type(onnx::AttributeProto::STRING); ap->set_s(a.str_v); break;
    case ir::Attr::ints:
      ap->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : a.ints_v) ap->add_ints(v);
      break;
    case ir::Attr::floats:
      ap->set_type(onnx::AttributeProto::FLOATS);
      for (float v : a.floats_v) ap->add_floats(v);
      break;
    case ir::Attr::tensor:
      ap->set_type(onnx::AttributeProto::TENSOR);
      tensor_to_proto(*a.tensor_v, ap->mutable_t());
      break;
    default: return Err("attribute %s has no value", k.c_str());
  }
  return Status::Ok();
}

void write_value_info(const ir::Tensor& t, const ir::Shape& dims, onnx::ValueInfoProto* vi) {
  vi->set_name(t.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("batch");
  }
}

}  // namespace

Status export_onnx(const ir::Graph& g, const ExportOptions& o, onnx::ModelProto* model) {
  model->Clear();
  model->set_ir_version(8);
  model->set_producer_name(o.producer);
  auto* os = model->add_opset_import();
  os->set_domain("");
  os->set_version(o.opset);
  auto* gp = model->mutable_graph();
  gp->set_name("systolic");
  std::vector<char> used(g.tensors.size(), 0);
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::Op::Reorder || n.op == ir::Op::NormalizeImage)
      return Err("cannot export %s %s: an internal op", ir::op_name(n.op), n.name.c_str());
    if (n.attrs.count("legacy_2d"))
      return Err("cannot export %s %s: its pre-13 Softmax form has no opset-%d equivalent", ir::op_name(n.op),
                 n.name.c_str(), o.opset);
    auto* np = gp->add_node();
    np->set_op_type(ir::op_name(n.op));
    np->set_name(n.name);
    for (int id : n.inputs) {
      np->add_input(id >= 0 ? g.t(id).name : "");
      if (id >= 0) used[id] = 1;
    }
    for (int id : n.outputs) np->add_output(id >= 0 ? g.t(id).name : "");
    for (const auto& [k, a] : n.attrs) {
      if (internal_attr(k)) {
        if (k == "act" || k == "src_u8" || k.rfind("q_", 0) == 0)
          return Err("cannot export %s %s: it carries the compiler's fused attribute %s", ir::op_name(n.op),
                     n.name.c_str(), k.c_str());
        continue;
      }
      SYSTOLIC_RETURN_IF_ERROR(write_attr(k, a, np->add_attribute()));
    }
  }
  for (int id : g.outputs) used[id] = 1;
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    if (used[i] && g.tensors[i].is_const()) tensor_to_proto(g.tensors[i], gp->add_initializer());
  auto dims = [&](const ir::Tensor& t) {
    auto it = o.io_shapes.find(t.name);
    return it != o.io_shapes.end() ? it->second : t.shape;
  };
  for (int id : g.inputs) write_value_info(g.t(id), dims(g.t(id)), gp->add_input());
  for (int id : g.outputs) write_value_info(g.t(id), dims(g.t(id)), gp->add_output());
  return Status::Ok();
}

}  // namespace systolic::frontend
