// ONNX model -> ir::Graph. Older opsets are rewritten to the opset-13 form here so that
// every later stage sees one form of each op.
#include "frontend/onnx/import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

#include "frontend/onnx/half_precision.h"
#include "frontend/onnx/legacy_broadcast.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/half.h"
#include "ir/rnn_activation.h"

namespace systolic::frontend {
namespace {

constexpr int kMinOpset = 1;
constexpr int kMaxOpset = 18;

ir::Attr convert_attr(const onnx::AttributeProto& a, const std::string& base_dir, Status* st) {
  ir::Attr r;
  switch (a.type()) {
    case onnx::AttributeProto::INT: r.kind = ir::Attr::i; r.int_v = a.i(); break;
    case onnx::AttributeProto::FLOAT: r.kind = ir::Attr::f; r.float_v = a.f(); break;
    case onnx::AttributeProto::STRING: r.kind = ir::Attr::s; r.str_v = a.s(); break;
    case onnx::AttributeProto::INTS:
      r.kind = ir::Attr::ints;
      r.ints_v.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      r.kind = ir::Attr::floats;
      r.floats_v.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      auto t = tensor_from_proto(a.t(), base_dir);
      if (!t.ok()) {
        *st = t.status();
        break;
      }
      r.kind = ir::Attr::tensor;
      r.tensor_v = std::make_shared<ir::Tensor>(std::move(t.value()));
      break;
    }
    default:
      *st = Err("attribute %s has an unsupported type", a.name().c_str());
  }
  return r;
}

// How deep If branches may nest (each level is a recursion of the importer and the runtime).
constexpr int kMaxNesting = 16;

struct Importer {
  ir::Graph g;
  std::unordered_map<std::string, int> ids;
  std::string base_dir;
  int opset = 13;
  Importer* parent = nullptr;          // the enclosing graph's importer (an If branch)
  int depth = 0;
  std::vector<std::string> captured;  // outer names this branch reads, in first-use order
  std::map<int, ir::DType> half_outputs;  // graph outputs declared float16 or bfloat16
  std::map<int, ir::DType> half_types;    // constants that were float16 or bfloat16 (now float32)
  std::unordered_map<std::string, int> legacy_ranks;  // value ranks, for opset < 7 broadcasting

  int tensor_id(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    ir::Tensor t;
    t.name = name;
    int id = g.add_tensor(std::move(t));
    ids[name] = id;
    return id;
  }

  int add_const(const std::string& name, ir::Tensor t) {
    t.name = name;
    int id = g.add_tensor(std::move(t));
    ids[name] = id;
    return id;
  }

  // Moves attribute `attr` (ints) into a new constant input at position `pos`.
  void attr_to_input(ir::Node& n, const std::string& attr, std::size_t pos) {
    if (!n.has(attr)) return;
    auto v = n.ints(attr);
    n.attrs.erase(attr);
    int id = g.add_const_i64(g.fresh_name(n.name + "." + attr), {static_cast<int64_t>(v.size())}, v);
    while (n.inputs.size() < pos) n.inputs.push_back(-1);
    if (n.inputs.size() == pos) n.inputs.push_back(id);
    else n.inputs[pos] = id;
  }

  // Rewrites an older opset's form of `n` into the opset-13 form.
  void normalize(ir::Node& n) {
    using ir::Op;
    if (n.op == Op::Clip && opset < 11) {
      float lo = n.f("min", -3.4028234663852886e38f), hi = n.f("max", 3.4028234663852886e38f);
      n.attrs.erase("min");
      n.attrs.erase("max");
      n.inputs.resize(1);
      n.inputs.push_back(g.add_const_f32(g.fresh_name(n.name + ".min"), {}, {lo}));
      n.inputs.push_back(g.add_const_f32(g.fresh_name(n.name + ".max"), {}, {hi}));
    }
    if ((n.op == Op::Squeeze || n.op == Op::Unsqueeze) && opset < 13) attr_to_input(n, "axes", 1);
    if (n.op == Op::Split && opset < 13) attr_to_input(n, "split", 1);
    if (n.op == Op::Slice && opset < 10) {
      attr_to_input(n, "starts", 1);
      attr_to_input(n, "ends", 2);
      attr_to_input(n, "axes", 3);
    }
    if (n.op == Op::Pad && opset < 11) {
      float value = n.f("value", 0.f);
      n.attrs.erase("value");
      attr_to_input(n, "pads", 1);
      n.inputs.push_back(g.add_const_f32(g.fresh_name(n.name + ".value"), {}, {value}));
    }
    if (n.op == Op::Softmax && opset < 13) {
      n.set_i("axis", n.i("axis", 1));
      n.set_i("legacy_2d", 1);  // pre-13: softmax over the flattened dims from axis on
    }
    const bool reduce = n.op == Op::ReduceMean || n.op == Op::ReduceMin || n.op == Op::ReduceMax ||
                        (n.op >= Op::ReduceSum && n.op <= Op::ReduceSumSquare);
    if (reduce && (opset >= 18 || (n.op == Op::ReduceSum && opset >= 13))) n.set_i("axes_as_input", 1);
    // The ops beyond the CNN core read their opset form from the node (interp/dispatch.h).
    if (n.op >= Op::Erf) n.set_i("_opset", opset);
  }

  Status run(const onnx::ModelProto& model) {
    opset = -1;
    for (const auto& os : model.opset_import())
      if (os.domain().empty() || os.domain() == "ai.onnx") opset = static_cast<int>(os.version());
    if (opset > kMaxOpset)
      return Err("model uses opset %d; systolic supports opsets %d to %d", opset, kMinOpset, kMaxOpset);
    g.opset = opset;
    if (opset < 7) legacy_ranks = legacy_broadcast_ranks(model);
    const onnx::GraphProto& gp = model.graph();
    SYSTOLIC_RETURN_IF_ERROR(import_initializers(gp));
    std::set<std::string> listed;
    for (const auto& vi : gp.input()) {
      if (!listed.insert(vi.name()).second) return Err("graph input %s is listed twice", vi.name().c_str());
      if (ids.count(vi.name())) continue;  // an initializer: a constant, not a runtime input
      if (!vi.type().has_tensor_type())
        return Err("input %s is not a tensor (sequences and maps are not supported)", vi.name().c_str());
      const auto& tt = vi.type().tensor_type();
      int id = tensor_id(vi.name());
      ir::Tensor& t = g.t(id);
      t.dtype = static_cast<ir::DType>(tt.elem_type());
      if (!ir::dtype_storable(t.dtype))
        return Err("input %s has element type %s, which is not supported", vi.name().c_str(),
                   ir::dtype_name(t.dtype));
      if (tt.has_shape()) {
        for (const auto& d : tt.shape().dim()) t.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
        t.shape_known = true;
      }
      g.inputs.push_back(id);
    }
    std::vector<std::string> unsupported;
    std::set<std::string> seen_unsupported;
    collect_unsupported(gp, &unsupported, &seen_unsupported);
    if (unsupported.empty() && opset < 0) return Err("model has no default-domain opset import");
    if (!unsupported.empty()) {
      std::string msg = "unsupported op" + std::string(unsupported.size() > 1 ? "s: " : ": ");
      for (std::size_t i = 0; i < unsupported.size(); ++i) msg += (i ? ", " : "") + unsupported[i];
      return Status::Error(msg);
    }
    SYSTOLIC_RETURN_IF_ERROR(import_nodes(gp));
    SYSTOLIC_RETURN_IF_ERROR(import_outputs(gp));
    return compute_half_in_f32(g, half_outputs, half_types);
  }

  Status import_initializers(const onnx::GraphProto& gp) {
    for (const auto& init : gp.initializer()) {
      // Names are single assignments: a second initializer of a name would silently win.
      if (ids.count(init.name())) return Err("initializer %s is defined twice", init.name().c_str());
      auto t = tensor_from_proto(init, base_dir);
      if (!t.ok()) return Err("initializer %s: %s", init.name().c_str(), t.status().message().c_str());
      const int id = add_const(init.name(), std::move(t.value()));
      if (ir::is_half(static_cast<ir::DType>(init.data_type()))) half_types[id] = static_cast<ir::DType>(init.data_type());
    }
    return Status::Ok();
  }

  // Every op of the graph and its branches that systolic lacks, once each.
  void collect_unsupported(const onnx::GraphProto& gp, std::vector<std::string>* unsupported,
                           std::set<std::string>* seen) const {
    for (const auto& np : gp.node()) {
      const std::string& dom = np.domain();
      if (np.op_type() == "Constant" && dom.empty()) continue;  // becomes a constant tensor
      auto op = ir::op_from_name(np.op_type());
      if ((!dom.empty() && dom != "ai.onnx") || !op || np.op_type() == "Reorder" || np.op_type() == "NormalizeImage") {
        std::string what = (dom.empty() ? "" : dom + ".") + np.op_type() + " (opset " + std::to_string(opset) + ")";
        if (seen->insert(what).second) unsupported->push_back(what);
      }
      for (const auto& a : np.attribute())
        if (a.type() == onnx::AttributeProto::GRAPH) collect_unsupported(a.g(), unsupported, seen);
    }
  }

  // The id of `name` here, or in an enclosing graph: a branch reads an outer value through an
  // input of its own (captured), which the If node then takes as an input.
  int lookup(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    if (!parent || parent->lookup(name) < 0) return -1;
    const int id = tensor_id(name);
    g.inputs.push_back(id);
    captured.push_back(name);
    return id;
  }

  Status import_nodes(const onnx::GraphProto& gp) {
    int counter = 0;
    for (const auto& np : gp.node()) {
      std::string name = np.name().empty() ? np.op_type() + "_" + std::to_string(counter) : np.name();
      ++counter;
      if (np.op_type() == "Constant") {
        SYSTOLIC_RETURN_IF_ERROR(import_constant(np, name));
        continue;
      }
      SYSTOLIC_RETURN_IF_ERROR(check_arity(np, name));
      ir::Node n;
      n.op = *ir::op_from_name(np.op_type());
      n.name = name;
      for (const auto& in : np.input()) {
        if (in.empty()) {
          n.inputs.push_back(-1);
          continue;
        }
        const int id = lookup(in);
        if (id < 0) return Err("node %s reads %s, which nothing produces", name.c_str(), in.c_str());
        n.inputs.push_back(id);
      }
      std::map<std::string, std::unique_ptr<Importer>> branches;  // by attribute name
      for (const auto& a : np.attribute()) {
        if (a.type() == onnx::AttributeProto::GRAPH) {
          if (n.op != ir::Op::If) return Err("node %s: graph attribute %s is not supported", name.c_str(), a.name().c_str());
          auto b = std::make_unique<Importer>();
          SYSTOLIC_RETURN_IF_ERROR(b->import_branch(*this, a.g(), name + "." + a.name()));
          ir::Attr attr;
          attr.kind = ir::Attr::graph;
          n.attrs[a.name()] = std::move(attr);
          branches[a.name()] = std::move(b);
          continue;
        }
        if (a.type() == onnx::AttributeProto::STRINGS && a.name() == "activations" &&
            (n.op == ir::Op::RNN || n.op == ir::Op::GRU || n.op == ir::Op::LSTM)) {
          std::vector<int64_t> codes;  // ir/rnn_activation.h
          for (const auto& s : a.strings()) {
            const int c = ir::rnn_act_code(s);
            if (c < 0) return Err("node %s: activation %s is not supported", name.c_str(), s.c_str());
            codes.push_back(c);
          }
          n.set_ints("activations", std::move(codes));
          continue;
        }
        Status st;
        ir::Attr attr = convert_attr(a, base_dir, &st);
        if (!st.ok()) return Err("node %s: %s", name.c_str(), st.message().c_str());
        n.attrs[a.name()] = std::move(attr);
      }
      if (n.op == ir::Op::If) SYSTOLIC_RETURN_IF_ERROR(bind_branches(n, branches));
      if (opset < 7) {
        auto rank_of = [&](int i) {
          const ir::Tensor& t = g.t(n.inputs[i]);
          if (t.shape_known || t.is_const()) return static_cast<int>(t.shape.size());
          auto it = legacy_ranks.find(np.input(i));
          return it == legacy_ranks.end() ? -1 : it->second;
        };
        Status st = unlegacy_broadcast(g, n, rank_of);
        if (!st.ok()) return st;
      }
      for (const auto& out : np.output()) {
        if (out.empty()) {
          n.outputs.push_back(-1);
          continue;
        }
        if (ids.count(out)) return Err("tensor %s is produced twice (node %s)", out.c_str(), name.c_str());
        n.outputs.push_back(tensor_id(out));
      }
      normalize(n);
      g.nodes.push_back(std::move(n));
    }
    return Status::Ok();
  }

  Status import_outputs(const onnx::GraphProto& gp) {
    std::set<std::string> outs;
    for (const auto& vi : gp.output()) {
      if (!outs.insert(vi.name()).second) return Err("graph output %s is listed twice", vi.name().c_str());
      const int id = lookup(vi.name());
      if (id < 0) return Err("graph output %s is never produced", vi.name().c_str());
      // The declared type: shape inference replaces it, except on an output shaped only at run
      // time, where it is what the model promises (-1 for a symbolic dim).
      ir::Tensor& t = g.t(id);
      const auto declared = static_cast<ir::DType>(vi.type().tensor_type().elem_type());
      if (vi.type().has_tensor_type() && ir::is_half(declared)) half_outputs[id] = declared;
      if (vi.type().has_tensor_type() && t.dtype == ir::DType::undefined && !t.is_const()) {
        const auto& tt = vi.type().tensor_type();
        if (ir::dtype_supported(static_cast<ir::DType>(tt.elem_type()))) t.dtype = static_cast<ir::DType>(tt.elem_type());
        if (tt.has_shape())
          for (const auto& d : tt.shape().dim()) t.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
      g.outputs.push_back(id);
    }
    return ir::verify(g);
  }

  // An If branch: no inputs of its own in ONNX; outer values it reads become its inputs.
  Status import_branch(Importer& outer, const onnx::GraphProto& gp, const std::string& what) {
    if (outer.depth >= kMaxNesting) return Err("%s: branches nested more than %d deep", what.c_str(), kMaxNesting);
    parent = &outer;
    depth = outer.depth + 1;
    base_dir = outer.base_dir;
    opset = outer.opset;
    g.opset = opset;
    g.name_counter = 0;
    if (gp.input_size() != 0) return Err("%s takes inputs; an If branch takes none", what.c_str());
    SYSTOLIC_RETURN_IF_ERROR(import_initializers(gp));
    Status st = import_nodes(gp);
    if (st.ok()) st = import_outputs(gp);
    if (!st.ok()) return Err("%s: %s", what.c_str(), st.message().c_str());
    return Status::Ok();
  }

  // The If node reads every outer value either branch captured, in one order; each branch's
  // inputs are put in that order (a value only the other branch reads is an unused input).
  Status bind_branches(ir::Node& n, std::map<std::string, std::unique_ptr<Importer>>& branches) {
    if (branches.size() != 2 || !branches.count("then_branch") || !branches.count("else_branch"))
      return Err("If %s needs then_branch and else_branch", n.name.c_str());
    std::vector<std::string> names;
    for (const auto& [key, b] : branches)
      for (const std::string& c : b->captured)
        if (std::find(names.begin(), names.end(), c) == names.end()) names.push_back(c);
    for (const std::string& c : names) n.inputs.push_back(lookup(c));
    for (auto& [key, bp] : branches) {
      Importer& b = *bp;
      std::vector<int> ins;
      for (const std::string& c : names) {
        auto it = b.ids.find(c);
        ins.push_back(it != b.ids.end() ? it->second : b.tensor_id(c));
      }
      b.g.inputs = std::move(ins);
      n.attrs[key].graph_v = std::make_shared<ir::Graph>(std::move(b.g));
    }
    return Status::Ok();
  }

  // ONNX's schema for the node's opset says how many inputs and outputs it takes and which
  // inputs are required: every later stage relies on them, so a node without them is refused
  // here, by name.
  Status check_arity(const onnx::NodeProto& np, const std::string& name) const {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(np.op_type(), opset, "");
    if (!s) return Err("%s %s: not an operator of ONNX opset %d", np.op_type().c_str(), name.c_str(), opset);
    const int ni = np.input_size(), no = np.output_size();
    if (ni < s->min_input() || ni > s->max_input() || no < s->min_output() || no > s->max_output())
      return Err("%s %s (opset %d) has %d inputs and %d outputs; it takes %d to %d inputs and %d to %d outputs",
                 np.op_type().c_str(), name.c_str(), opset, ni, no, s->min_input(), s->max_input(), s->min_output(),
                 s->max_output());
    const auto& formal = s->inputs();
    for (int i = 0; i < ni && !formal.empty(); ++i) {
      const auto& f = formal[std::min<std::size_t>(i, formal.size() - 1)];
      if (np.input(i).empty() && f.GetOption() != onnx::OpSchema::Optional)
        return Err("%s %s (opset %d): required input %d (%s) is missing", np.op_type().c_str(), name.c_str(), opset, i,
                   f.GetName().c_str());
    }
    return Status::Ok();
  }

  Status import_constant(const onnx::NodeProto& np, const std::string& name) {
    if (np.output_size() != 1) return Err("Constant %s must have one output", name.c_str());
    ir::Tensor t;
    bool found = false;
    for (const auto& a : np.attribute()) {
      found = true;
      if (a.name() == "value") {
        auto r = tensor_from_proto(a.t(), base_dir);
        if (!r.ok()) return Err("Constant %s: %s", name.c_str(), r.status().message().c_str());
        t = std::move(r.value());
      } else if (a.name() == "value_float" || a.name() == "value_floats") {
        std::vector<float> v = a.name() == "value_float" ? std::vector<float>{a.f()}
                                                         : std::vector<float>(a.floats().begin(), a.floats().end());
        ir::Shape s = a.name() == "value_float" ? ir::Shape{} : ir::Shape{static_cast<int64_t>(v.size())};
        int id = g.add_const_f32(np.output(0), s, v);
        t = g.t(id);
        g.tensors.pop_back();
      } else if (a.name() == "value_int" || a.name() == "value_ints") {
        std::vector<int64_t> v = a.name() == "value_int" ? std::vector<int64_t>{a.i()}
                                                         : std::vector<int64_t>(a.ints().begin(), a.ints().end());
        ir::Shape s = a.name() == "value_int" ? ir::Shape{} : ir::Shape{static_cast<int64_t>(v.size())};
        int id = g.add_const_i64(np.output(0), s, v);
        t = g.t(id);
        g.tensors.pop_back();
      } else {
        return Err("Constant %s: attribute %s is not supported", name.c_str(), a.name().c_str());
      }
    }
    if (!found) return Err("Constant %s has no value", name.c_str());
    if (ids.count(np.output(0))) return Err("tensor %s is produced twice", np.output(0).c_str());
    const auto declared = static_cast<ir::DType>(np.attribute(0).t().data_type());
    const int id = add_const(np.output(0), std::move(t));
    if (np.attribute(0).name() == "value" && ir::is_half(declared)) half_types[id] = declared;
    return Status::Ok();
  }
};

}  // namespace

Expected<ir::Graph> import_onnx_bytes(const std::string& bytes, const std::string& base_dir) {
  onnx::ModelProto model;
  if (bytes.empty()) return Err("model is empty");
  if (!model.ParseFromString(bytes))
    return Err("not a valid ONNX model (protobuf parse failed; truncated or not an .onnx file?)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    return Err("not a valid ONNX model (no graph or no nodes)");
  Importer imp;
  imp.base_dir = base_dir;
  Status st = imp.run(model);
  if (!st.ok()) return st;
  return std::move(imp.g);
}

Expected<ir::Graph> import_onnx_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Err("cannot open model file %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  std::string dir = ".";
  auto slash = path.find_last_of('/');
  if (slash != std::string::npos) dir = path.substr(0, slash);
  auto r = import_onnx_bytes(ss.str(), dir);
  if (!r.ok()) return Err("%s: %s", path.c_str(), r.status().message().c_str());
  return r;
}

}  // namespace systolic::frontend
