// QDQ export: biases are int32 in units of the input's scale times each channel's weight scale,
// never clamped (where the input's range is tiny, the channel's weight scale widens so the bias
// stays what the float model has); sums a normalization reads stay float; a symbolic batch stays
// symbolic where the model's shape arithmetic allows.
#include "quantize/qdq_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "kernels/qconv/qconv.h"
#include "passes/pass.h"
#include "tests/temp_dir.h"

namespace systolic::testing {
namespace {

// An opset-13 model whose graph (returned) has one input, float "input" [1,2,4,4].
onnx::GraphProto* with_input(onnx::ModelProto* m) {
  m->set_ir_version(8);
  m->add_opset_import()->set_version(13);
  auto* g = m->mutable_graph();
  auto* in = g->add_input();
  in->set_name("input");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 2, 4, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return g;
}

// input [1,2,4,4] -> Conv 1x1 (2 -> 2, weights w, bias b) -> y.
std::string conv_with_bias(const std::string& path, const std::vector<float>& w, const std::vector<float>& b) {
  onnx::ModelProto m;
  auto* g = with_input(&m);
  auto init = [&](const char* name, std::vector<int64_t> dims, const std::vector<float>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  };
  init("w", {2, 2, 1, 1}, w);
  init("b", {2}, b);
  auto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv");
  for (const char* i : {"input", "w", "b"}) conv->add_input(i);
  conv->add_output("y");
  g->add_output()->set_name("y");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

std::map<std::string, const onnx::TensorProto*> initializers(const onnx::ModelProto& m) {
  std::map<std::string, const onnx::TensorProto*> out;
  for (const auto& t : m.graph().initializer()) out[t.name()] = &t;
  return out;
}

std::vector<float> floats(const onnx::TensorProto& t) {
  if (t.float_data_size()) return {t.float_data().begin(), t.float_data().end()};
  std::vector<float> v(t.raw_data().size() / 4);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  return v;
}

std::vector<int32_t> ints(const onnx::TensorProto& t) {
  if (t.int32_data_size()) return {t.int32_data().begin(), t.int32_data().end()};
  std::vector<int32_t> v(t.raw_data().size() / 4);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  return v;
}

// The bias as written (int32 x scale), for an input range of +-range.
std::vector<float> written_bias(float range, std::vector<int32_t>* q) {
  const std::string path = conv_with_bias(scratch_dir("qdq_export") + "/conv.onnx", {0.5f, -0.25f, 0.125f, 1.f}, {0.75f, -2.f});
  quantize::QuantMap ranges;
  ranges["input"] = quantize::uint8_params(-range, range);
  onnx::ModelProto m;
  Status st = quantize::export_qdq(path, ranges, {}, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  // The conv's bias input comes from a DequantizeLinear of (int32, scale, zero point).
  auto init = initializers(m);
  std::string bias;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Conv" && n.input_size() == 3) bias = n.input(2);
  const onnx::NodeProto* dq = nullptr;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "DequantizeLinear" && n.output_size() == 1 && n.output(0) == bias) dq = &n;
  EXPECT_NE(dq, nullptr) << "no DequantizeLinear writes the conv's bias " << bias;
  if (!dq || !init.count(dq->input(0)) || !init.count(dq->input(1))) return {};
  EXPECT_EQ(init[dq->input(0)]->data_type(), onnx::TensorProto::INT32);
  *q = ints(*init[dq->input(0)]);
  const std::vector<float> s = floats(*init[dq->input(1)]);
  std::vector<float> b;
  for (std::size_t i = 0; i < q->size(); ++i) b.push_back(float((*q)[i]) * s[i]);
  return b;
}

// input [N,2,4,4] -> Reshape to [N, 2, 16] with the target computed from Shape(input); with
// `constant_of_shape`, also a ConstantOfShape of that target (an output computed from N); with
// `batch_inside`, a ConstantOfShape [2, N, 8] instead (an LSTM's zero initial state).
std::string batch_reshape(const std::string& path, bool constant_of_shape, bool batch_inside = false) {
  onnx::ModelProto m;
  auto* g = with_input(&m);
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  auto i64 = [&](const char* name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
  };
  i64("zero", {}, {0});
  i64("axes", {1}, {0});
  i64("rest", {2}, {2, 16});
  auto node = [&](const char* op, std::vector<const char*> in, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Shape", {"input"}, "s");
  auto* gather = node("Gather", {"s", "zero"}, "n");
  gather->add_attribute()->set_name("axis");
  gather->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  gather->mutable_attribute(0)->set_i(0);
  node("Unsqueeze", {"n", "axes"}, "n1");
  auto* cat = node("Concat", {"n1", "rest"}, "target");
  cat->add_attribute()->set_name("axis");
  cat->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  cat->mutable_attribute(0)->set_i(0);
  node("Reshape", {"input", "target"}, "y");
  g->add_output()->set_name("y");
  if (constant_of_shape) {
    node("ConstantOfShape", {"target"}, "z");
    g->add_output()->set_name("z");
  }
  if (batch_inside) {
    i64("two", {1}, {2});
    i64("eight", {1}, {8});
    auto* state = node("Concat", {"two", "n1", "eight"}, "state_shape");
    state->add_attribute()->set_name("axis");
    state->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
    state->mutable_attribute(0)->set_i(0);
    node("ConstantOfShape", {"state_shape"}, "h0");
    g->add_output()->set_name("h0");
  }
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

// Exports `path` with only its input calibrated, to [-1, 1] (the test fails on an error).
void export_input_range(const std::string& path, onnx::ModelProto* m, quantize::QdqExportStats* st) {
  quantize::QuantMap ranges;
  ranges["input"] = quantize::uint8_params(-1.f, 1.f);
  Status s = quantize::export_qdq(path, ranges, {}, m, st);
  ASSERT_TRUE(s.ok()) << s.message();
}

// A shape computed from the batch that is not a leading dim (an LSTM's [directions, batch,
// hidden] state) cannot be written for every batch: the file takes batch 1, declared so,
// rather than a symbolic batch with a state folded at some other size.
TEST(QdqExport, ABatchInsideAComputedShapeFixesTheBatch) {
  onnx::ModelProto m;
  quantize::QdqExportStats st;
  export_input_range(batch_reshape(scratch_dir("qdq_export") + "/state.onnx", false, true), &m, &st);
  EXPECT_TRUE(st.batch_fixed);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 1);
  // The written state holds batch 1: [2, 1, 8].
  bool found = false;
  for (const auto& o : m.graph().output())
    if (o.name() == "h0") {
      found = true;
      const auto& sh = o.type().tensor_type().shape();
      ASSERT_EQ(sh.dim_size(), 3);
      EXPECT_EQ(sh.dim(1).dim_value(), 1);
    }
  EXPECT_TRUE(found);
}

TEST(QdqExport, ASymbolicBatchStaysSymbolicThroughAReshape) {
  for (bool fixed : {false, true}) {
    onnx::ModelProto m;
    quantize::QdqExportStats st;
    export_input_range(batch_reshape(scratch_dir("qdq_export") + "/reshape.onnx", fixed), &m, &st);
    EXPECT_EQ(st.batch_fixed, fixed);
    // The input and the output (its shape computed here, none in the model) alike.
    for (const onnx::ValueInfoProto* v : {&m.graph().input(0), &m.graph().output(0)}) {
      ASSERT_EQ(v->type().tensor_type().shape().dim_size(), v == &m.graph().input(0) ? 4 : 3) << v->name();
      const auto& dim0 = v->type().tensor_type().shape().dim(0);
      EXPECT_EQ(dim0.has_dim_param(), !fixed) << v->name();
      if (fixed) {
        EXPECT_EQ(dim0.dim_value(), 1) << v->name();
      }
    }
    auto init = initializers(m);
    int reshapes = 0;
    for (const auto& n : m.graph().node())
      if (n.op_type() == "Reshape") {
        ++reshapes;
        ASSERT_TRUE(init.count(n.input(1))) << n.input(1);
        const onnx::TensorProto& t = *init[n.input(1)];
        std::vector<int64_t> v(t.int64_data().begin(), t.int64_data().end());
        if (v.empty()) {
          v.resize(t.raw_data().size() / 8);
          std::memcpy(v.data(), t.raw_data().data(), v.size() * 8);
        }
        // Batch-free, the leading dim is copied from the input (0); fixed, it is 1.
        EXPECT_EQ(v, (std::vector<int64_t>{fixed ? 1 : 0, 2, 16}));
      }
    EXPECT_EQ(reshapes, 1);
  }
}

TEST(QdqExport, BiasIsInt32InTheInputTimesWeightScale) {
  std::vector<int32_t> q;
  const std::vector<float> b = written_bias(1.f, &q);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0], 0.75f, 1e-4f);
  EXPECT_NEAR(b[1], -2.f, 1e-4f);
}

// At +-1e-12 the bias in units of the input's scale (~8e-15) times a weight scale (~4e-3) is
// ~2e16, past int32: clamping it wrote a bias of ~3e-8 in place of 0.75.
TEST(QdqExport, ATinyInputRangeWidensTheWeightScaleInsteadOfClampingTheBias) {
  std::vector<int32_t> q;
  const std::vector<float> b = written_bias(1e-12f, &q);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0], 0.75f, 1e-6f);
  EXPECT_NEAR(b[1], -2.f, 1e-6f);
  for (int32_t v : q) EXPECT_LE(std::abs(v), kernels::kQConvMaxBias);
}

// A sum that a normalization reads (a transformer's residual stream) keeps no Q/DQ pair, as in
// systolic's own int8 plans; the other activations get theirs.
TEST(QdqExport, ASumANormalizationReadsStaysFloat) {
  onnx::ModelProto m;
  auto* g = with_input(&m);
  auto node = [&](const char* op, std::vector<const char*> ins, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const char* i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Relu", {"input"}, "r");
  node("Add", {"r", "input"}, "s");
  auto* axes = node("ReduceMean", {"s"}, "y")->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  g->add_output()->set_name("y");
  const std::string path = scratch_dir("qdq_export") + "/sum.onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  quantize::QuantMap ranges;
  for (const char* t : {"input", "r", "s"}) ranges[t] = quantize::uint8_params(-2.f, 2.f);
  onnx::ModelProto q;
  Status st = quantize::export_qdq(path, ranges, {}, &q);
  ASSERT_TRUE(st.ok()) << st.message();
  std::map<std::string, int> quantized;  // tensor -> QuantizeLinear nodes reading it
  for (const auto& n : q.graph().node())
    if (n.op_type() == "QuantizeLinear") ++quantized[n.input(0)];
  EXPECT_EQ(quantized["input"], 1);
  EXPECT_EQ(quantized["r"], 1);
  EXPECT_EQ(quantized["s"], 0);
}

// A video model's activations between 3-D convs are measured in their 4-D form (the lowered
// plan's tensors, passes::volume_held_name): the export finds them there, and quantizes the 3-D
// convs' weights per output channel.
TEST(QdqExport, ThreeDConvsTakeTheRangesOfTheir4DForms) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("input");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 2, 3, 4, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto conv = [&](const char* x, const char* w, const char* y) {
    auto* t = g->add_initializer();
    t->set_name(w);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {2, 2, 3, 1, 1}) t->add_dims(d);
    for (int i = 0; i < 12; ++i) t->add_float_data(0.1f * float(i % 5) - 0.2f);
    auto* n = g->add_node();
    n->set_op_type("Conv");
    n->set_name(y);
    n->add_input(x);
    n->add_input(w);
    n->add_output(y);
    auto* pads = n->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : {1, 0, 0, 1, 0, 0}) pads->add_ints(v);
  };
  conv("input", "w1", "c1");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("c1");
  relu->add_output("r");
  conv("r", "w2", "y");
  g->add_output()->set_name("y");
  const std::string path = scratch_dir("qdq_export") + "/video.onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  quantize::QuantMap ranges;
  ranges["input"] = quantize::uint8_params(-2.f, 2.f);
  ranges[passes::volume_held_name("r")] = quantize::uint8_params(0.f, 2.f);
  onnx::ModelProto q;
  Status st = quantize::export_qdq(path, ranges, {}, &q);
  ASSERT_TRUE(st.ok()) << st.message();
  auto init = initializers(q);
  std::map<std::string, int> quantized;  // tensor -> QuantizeLinear nodes reading it
  int int8_weights = 0;
  for (const auto& n : q.graph().node()) {
    if (n.op_type() == "QuantizeLinear") ++quantized[n.input(0)];
    if (n.op_type() == "DequantizeLinear" && init.count(n.input(0)) && init[n.input(0)]->data_type() == onnx::TensorProto::INT8)
      ++int8_weights;
  }
  EXPECT_EQ(quantized["input"], 1);
  EXPECT_EQ(quantized["r"], 1);
  EXPECT_EQ(int8_weights, 2);
}

}  // namespace
}  // namespace systolic::testing
