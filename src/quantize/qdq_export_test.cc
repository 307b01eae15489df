// QDQ export: biases are int32 in units of the input's scale times each channel's weight scale,
// never clamped (where the input's range is tiny, the channel's weight scale widens so the bias
// stays what the float model has); sums a normalization reads stay float.
#include "quantize/qdq_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "kernels/qconv/qconv.h"
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

}  // namespace
}  // namespace systolic::testing
