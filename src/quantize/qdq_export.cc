// QDQ export: import, fold batch norms, annotate activations by name, quantize weights and
// biases, insert the Q/DQ pairs, write ONNX.
#include "quantize/qdq_export.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "frontend/onnx/export.h"
#include "frontend/onnx/import.h"
#include "kernels/qconv/qconv.h"
#include "passes/pass.h"

namespace systolic::quantize {
namespace {

constexpr int64_t kBatchMark = 3;

using ir::DType;
using ir::Op;

int scalar_f32(ir::Graph& g, const std::string& name, float v) { return g.add_const_f32(g.fresh_name(name), {}, {v}); }

int bytes_const(ir::Graph& g, const std::string& name, DType dt, ir::Shape shape, const void* data, std::size_t n) {
  AlignedBytes b(n);
  if (n) std::memcpy(b.data(), data, n);
  return g.add_const(g.fresh_name(name), dt, std::move(shape), std::move(b));
}

bool passes_quantization_through(Op op) {
  return op == Op::MaxPool || op == Op::GlobalMaxPool || op == Op::Flatten || op == Op::Reshape ||
         op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Transpose || op == Op::Identity;
}

// Per-output-channel symmetric int8 of the constant `w` along `axis`, behind a
// DequantizeLinear; returns the float tensor consumers read, and the scales (each at least
// min_scale[c] where given).
int quantize_weight(ir::Graph& g, std::vector<ir::Node>* pre, int w, int axis, float qmax, std::vector<float>* scales,
                    const std::vector<float>& min_scale = {}) {
  const ir::Tensor wt = g.t(w);
  const int64_t channels = wt.shape[axis];
  int64_t inner = 1;
  for (std::size_t d = axis + 1; d < wt.shape.size(); ++d) inner *= wt.shape[d];
  const float* v = wt.as<float>();
  const int64_t n = wt.numel();
  scales->assign(channels, 0.f);
  for (int64_t i = 0; i < n; ++i) {
    float& m = (*scales)[(i / inner) % channels];
    m = std::max(m, std::fabs(v[i]));
  }
  for (float& s : *scales) s = s > 0.f ? s / qmax : 1.f;
  for (std::size_t c = 0; c < min_scale.size() && c < scales->size(); ++c)
    (*scales)[c] = std::max((*scales)[c], min_scale[c]);
  std::vector<int8_t> q(n);
  for (int64_t i = 0; i < n; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] / (*scales)[(i / inner) % channels]), -qmax, qmax));
  const std::vector<int8_t> zeros(channels, 0);
  ir::Node dq;
  dq.op = Op::DequantizeLinear;
  dq.name = g.fresh_name(wt.name + "_DequantizeLinear");
  dq.inputs = {bytes_const(g, wt.name + "_quantized", DType::i8, wt.shape, q.data(), q.size()),
               g.add_const_f32(g.fresh_name(wt.name + "_scale"), {channels}, *scales),
               bytes_const(g, wt.name + "_zero_point", DType::i8, {channels}, zeros.data(), zeros.size())};
  dq.set_i("axis", axis);
  ir::Tensor f;
  f.name = g.fresh_name(wt.name + "_dequantized");
  f.dtype = DType::f32;
  f.shape = wt.shape;
  f.shape_known = true;
  const int out = g.add_tensor(std::move(f));
  dq.outputs = {out};
  pre->push_back(std::move(dq));
  return out;
}

// A float bias [C] as int32 in the scale x_scale * w_scale[c], behind a DequantizeLinear.
int quantize_bias(ir::Graph& g, std::vector<ir::Node>* pre, int b, float sx, const std::vector<float>& sw) {
  const ir::Tensor bt = g.t(b);
  const int64_t c = bt.numel();
  std::vector<float> scale(c);
  std::vector<int32_t> q(c), zeros(c, 0);
  for (int64_t i = 0; i < c; ++i) {
    scale[i] = sx * sw[i];
    q[i] = static_cast<int32_t>(std::clamp(std::nearbyint(double(bt.as<float>()[i]) / scale[i]), -2147483648.0, 2147483647.0));
  }
  ir::Node dq;
  dq.op = Op::DequantizeLinear;
  dq.name = g.fresh_name(bt.name + "_DequantizeLinear");
  dq.inputs = {bytes_const(g, bt.name + "_quantized", DType::i32, {c}, q.data(), q.size() * 4),
               g.add_const_f32(g.fresh_name(bt.name + "_scale"), {c}, scale),
               bytes_const(g, bt.name + "_zero_point", DType::i32, {c}, zeros.data(), zeros.size() * 4)};
  dq.set_i("axis", 0);
  ir::Tensor f;
  f.name = g.fresh_name(bt.name + "_dequantized");
  f.dtype = DType::f32;
  f.shape = bt.shape;
  f.shape_known = true;
  const int out = g.add_tensor(std::move(f));
  dq.outputs = {out};
  pre->push_back(std::move(dq));
  return out;
}

// Reshapes whose folded target starts with the batch (`mark`), from a tensor that does too,
// copy it from their input instead (ONNX's 0). False when another constant shape starts with
// it: that one may have come from the batch, and a file with a symbolic batch cannot hold it.
bool unbind_batch(ir::Graph& g, int64_t mark) {
  for (ir::Node& n : g.nodes) {
    const bool shaping = n.op == Op::Reshape || n.op == Op::Expand || n.op == Op::Tile || n.op == Op::ConstantOfShape;
    const int s = n.op == Op::ConstantOfShape ? n.in(0) : n.in(1);
    if (!shaping || s < 0 || !g.t(s).is_const() || g.t(s).dtype != DType::i64 || g.t(s).numel() < 1) continue;
    const int64_t* v = g.t(s).as<int64_t>();
    if (v[0] != mark) continue;
    const int x = n.in(0);
    if (n.op != Op::Reshape || x < 0 || g.t(x).shape.empty() || g.t(x).shape[0] != mark || n.i("allowzero", 0) != 0)
      return false;
    std::vector<int64_t> shape(v, v + g.t(s).numel());
    shape[0] = 0;
    n.inputs[1] = g.add_const_i64(g.fresh_name(g.t(s).name + "_batch_free"), g.t(s).shape, shape);
  }
  return true;
}

// Folds an imported graph's shape sub-graphs at `batch` (and its batch norms); `folded` gets the
// names of the constants folding made (tensors that were not constants in the file).
Status fold_at(ir::Graph& g, int64_t batch, const QdqExportOptions& o, std::set<std::string>* folded) {
  std::set<std::string> given;
  for (const ir::Tensor& t : g.tensors)
    if (t.is_const()) given.insert(t.name);
  passes::PassContext ctx;
  ctx.batch = batch;
  ctx.input_shapes = o.input_shapes;
  for (auto pass : {passes::bind_input_shapes, passes::constant_folding, passes::shape_inference,
                    passes::dead_code_elimination, passes::fold_batchnorm})
    SYSTOLIC_RETURN_IF_ERROR(pass(g, ctx));
  for (const ir::Tensor& t : g.tensors)
    if (t.is_const() && !given.count(t.name)) folded->insert(t.name);
  return Status::Ok();
}

// Whether a constant folded at kBatchMark is the same at another batch: one that is not came
// from the batch in a place unbind_batch cannot write back (an LSTM's zero initial state
// [directions, batch, hidden], expanded from the input's shape), so the file cannot keep a
// symbolic batch. The Reshape targets unbind_batch rewrites are left to it.
Status batch_free_constants(const std::string& model_path, const QdqExportOptions& o, const ir::Graph& g,
                            const std::set<std::string>& folded, bool* free) {
  auto imported = frontend::import_onnx_file(model_path);
  if (!imported.ok()) return imported.status();
  ir::Graph other = std::move(*imported);
  std::set<std::string> other_folded;
  SYSTOLIC_RETURN_IF_ERROR(fold_at(other, kBatchMark + 2, o, &other_folded));
  std::map<std::string, const ir::Tensor*> by_name;
  for (const ir::Tensor& t : other.tensors)
    if (t.is_const()) by_name[t.name] = &t;
  std::set<int> reshape_targets;
  for (const ir::Node& n : g.nodes)
    if (n.op == Op::Reshape && n.in(1) >= 0) reshape_targets.insert(n.in(1));
  *free = true;
  auto check = [&](int id) {
    if (id < 0 || reshape_targets.count(id) || !folded.count(g.t(id).name)) return;
    const ir::Tensor& t = g.t(id);
    auto it = by_name.find(t.name);
    if (it == by_name.end() || it->second->shape != t.shape || it->second->dtype != t.dtype ||
        *it->second->data != *t.data)
      *free = false;
  };
  for (const ir::Node& n : g.nodes)
    for (int id : n.inputs) check(id);
  for (int id : g.outputs) check(id);
  return Status::Ok();
}

// One attempt: `mark` binds a symbolic batch to kBatchMark and writes it back symbolic (false
// in *batch_free when the graph's constant shapes do not allow it), else to 1, declared so.
Status export_at(const std::string& model_path, const QuantMap& ranges, const QdqExportOptions& o,
                 onnx::ModelProto* out, QdqExportStats* stats, bool mark, bool* batch_free) {
  auto imported = frontend::import_onnx_file(model_path);
  if (!imported.ok()) return imported.status();
  ir::Graph g = std::move(*imported);
  frontend::ExportOptions eo;
  eo.opset = std::max(13, g.opset);
  for (int id : g.inputs) eo.io_shapes[g.t(id).name] = g.t(id).shape;
  for (int id : g.outputs)
    if (g.t(id).shape_known) eo.io_shapes[g.t(id).name] = g.t(id).shape;
  // A symbolic batch is bound to an odd size while shape sub-graphs fold, so the Reshapes that
  // carry it can be told apart and written batch-free below (a file folded at batch 1 would
  // declare a symbolic batch and then reshape to 1: ShuffleNet's channel shuffle).
  bool symbolic_batch = false;
  for (int id : g.inputs)
    symbolic_batch |= g.t(id).shape_known && !g.t(id).shape.empty() && g.t(id).shape[0] < 0 &&
                      !o.input_shapes.count(g.t(id).name);
  mark = mark && symbolic_batch;
  if (symbolic_batch && !mark)
    for (auto& [name, shape] : eo.io_shapes)
      if (!shape.empty() && shape[0] < 0) shape[0] = 1;
  std::set<std::string> folded;
  SYSTOLIC_RETURN_IF_ERROR(fold_at(g, mark ? kBatchMark : 1, o, &folded));
  for (int id : g.outputs) {
    ir::Shape shape = g.t(id).shape;
    if (mark && !shape.empty() && shape[0] == kBatchMark) shape[0] = -1;
    eo.io_shapes.emplace(g.t(id).name, shape);  // an output's own shape in the file, if it had one
  }
  if (mark) {
    SYSTOLIC_RETURN_IF_ERROR(batch_free_constants(model_path, o, g, folded, batch_free));
    if (!*batch_free || !unbind_batch(g, kBatchMark)) {
      *batch_free = false;
      return Status::Ok();
    }
  }
  // Bound symbolic dims: the file takes the sizes calibration ran at, inputs and outputs alike
  // (a dim derived from a bound one has no name of its own to keep).
  if (!o.input_shapes.empty())
    for (const std::vector<int>* ids : {&g.inputs, &g.outputs})
      for (int id : *ids) eo.io_shapes[g.t(id).name] = g.t(id).shape;

  // Activations: the calibrated parameters, by name; ops that only move or select values
  // keep their input's, as the quantizers of the engines that read QDQ expect.
  QdqExportStats st;
  for (std::size_t i = 0; i < g.tensors.size(); ++i) {
    ir::Tensor& t = g.tensors[i];
    if (t.is_const() || t.dtype != DType::f32) continue;
    auto it = ranges.find(t.name);
    // A video model's activations between 3-D convs were measured in their 4-D form.
    if (it == ranges.end()) it = ranges.find(passes::volume_held_name(t.name));
    if (it != ranges.end()) t.quant = it->second;
  }
  // A sum that a normalization reads stays float, as in systolic's own int8 plans.
  const auto consumers = g.consumers();
  for (const ir::Node& n : g.nodes)
    if (passes::sum_stays_float(g.nodes, consumers, n)) g.t(n.outputs[0]).quant = {};
  for (const ir::Node& n : g.nodes)
    if (passes_quantization_through(n.op) && n.outputs.size() == 1 && !g.t(n.inputs[0]).quant.empty())
      g.t(n.outputs[0]).quant = g.t(n.inputs[0]).quant;

  // Weights and biases of the matrix ops whose input is quantized.
  std::vector<ir::Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  std::vector<ir::Node> result;
  for (ir::Node& n : nodes) {
    const bool matrix = n.op == Op::Conv || n.op == Op::Gemm || n.op == Op::MatMul;
    const int x = n.inputs.empty() ? -1 : n.inputs[0];
    if (matrix && !o.keep_fp32.count(n.name) && x >= 0 && g.t(x).quant.per_tensor() && n.in(1) >= 0 &&
        g.t(n.in(1)).is_const() && g.t(n.in(1)).dtype == DType::f32) {
      const ir::Tensor& w = g.t(n.in(1));
      int axis = -1;
      if (n.op == Op::Conv && w.shape.size() >= 3) axis = 0;
      if (n.op == Op::Gemm && w.shape.size() == 2 && n.i("transA", 0) == 0) axis = n.i("transB", 0) ? 0 : 1;
      if (n.op == Op::MatMul && w.shape.size() == 2) axis = 1;
      if (axis >= 0) {
        const float sx = g.t(x).quant.scale[0];
        const int b = n.in(2);
        const bool qbias = b >= 0 && g.t(b).is_const() && g.t(b).dtype == DType::f32 &&
                           g.t(b).shape == ir::Shape{w.shape[axis]} && (n.op == Op::Conv || n.f("beta", 1.f) == 1.f);
        // Where a bias in units of sx times a channel's scale would pass half the range int8
        // kernels sum exactly (kQConvMaxBias; int32 itself would clamp it into a wrong value),
        // that channel's scale widens: an input calibrated to a tiny range makes the bias
        // dominate the channel's output.
        std::vector<float> min_scale;
        if (qbias && sx > 0.f)
          for (int64_t c = 0; c < g.t(b).numel(); ++c)
            min_scale.push_back(kernels::qconv_min_weight_scale(g.t(b).as<float>()[c], sx));
        std::vector<float> sw;
        n.inputs[1] = quantize_weight(g, &result, n.inputs[1], axis, o.reduce_range ? 63.f : 127.f, &sw, min_scale);
        ++st.weights;
        if (qbias) n.inputs[2] = quantize_bias(g, &result, b, sx, sw);
      }
    }
    result.push_back(std::move(n));
  }

  // A Q -> DQ pair after every quantized activation (graph outputs keep their names on the DQ).
  nodes = std::move(result);
  result.clear();
  std::map<int, int> replaced;  // activation -> the DQ output its consumers read
  // Adds the pair for `t`; returns the tensor t's producer writes (a new one for an output).
  auto pair = [&](int t) {
    const ir::QuantParams q = g.t(t).quant;
    const std::string name = g.t(t).name;
    auto fresh = [&](const std::string& suffix, DType dt) {
      ir::Tensor n = g.t(t);
      n.name = g.fresh_name(name + suffix);
      n.dtype = dt;
      n.quant = {};
      return g.add_tensor(std::move(n));
    };
    int src = t, dst;
    if (g.is_graph_output(t)) {
      src = fresh("_prequant", DType::f32);
      dst = t;
    } else {
      dst = fresh("_dequantized", DType::f32);
      replaced[t] = dst;
    }
    const int qid = fresh("_quantized", DType::u8);
    const uint8_t zp = static_cast<uint8_t>(q.zero_point[0]);
    const int scale = scalar_f32(g, name + "_scale", q.scale[0]);
    const int zero = bytes_const(g, name + "_zero_point", DType::u8, {}, &zp, 1);
    ir::Node qn, dn;
    qn.op = Op::QuantizeLinear;
    qn.name = g.fresh_name(name + "_QuantizeLinear");
    qn.inputs = {src, scale, zero};
    qn.outputs = {qid};
    dn.op = Op::DequantizeLinear;
    dn.name = g.fresh_name(name + "_DequantizeLinear");
    dn.inputs = {qid, scale, zero};
    dn.outputs = {dst};
    result.push_back(std::move(qn));
    result.push_back(std::move(dn));
    ++st.activations;
    return src;
  };
  for (int id : g.inputs)
    if (g.t(id).quant.per_tensor()) pair(id);
  for (ir::Node& n : nodes) {
    for (int& in : n.inputs) {
      auto it = in >= 0 ? replaced.find(in) : replaced.end();
      if (it != replaced.end()) in = it->second;
    }
    std::vector<int> quantized;
    for (int o2 : n.outputs)
      if (o2 >= 0 && g.t(o2).quant.per_tensor()) quantized.push_back(o2);
    const std::size_t at = result.size();
    result.push_back(std::move(n));
    for (int t : quantized) {
      const int src = pair(t);
      for (int& o2 : result[at].outputs)
        if (o2 == t) o2 = src;
    }
  }
  g.nodes = std::move(result);
  for (ir::Tensor& t : g.tensors) t.quant = {};
  SYSTOLIC_RETURN_IF_ERROR(ir::verify(g));
  st.batch_fixed = symbolic_batch && !mark;
  if (stats) *stats = st;
  return frontend::export_onnx(g, eo, out);
}

}  // namespace

Status export_qdq(const std::string& model_path, const QuantMap& ranges, const QdqExportOptions& o,
                  onnx::ModelProto* out, QdqExportStats* stats) {
  bool batch_free = true;
  SYSTOLIC_RETURN_IF_ERROR(export_at(model_path, ranges, o, out, stats, true, &batch_free));
  if (batch_free) return Status::Ok();
  return export_at(model_path, ranges, o, out, stats, false, &batch_free);
}

}  // namespace systolic::quantize
