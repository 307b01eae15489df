// Plans costed in their own precision: an int8 plan's convs on int8 matrix units (at bf16 where
// a chip has no int8, noted), a bf16 plan's on bf16, fp32 where the plan keeps float; tensors
// at the sizes the plan stores them; the int8 plan's quantize step costed as the vector op it is.
#include <gtest/gtest.h>

#include <algorithm>

#include "quantize/calibrate.h"
#include "runtime/random_tensor.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "target/target.h"
#include "tests/graph_builder.h"

namespace systolic::sim {
namespace {

// conv 16 -> 32 (3x3) -> ReLU -> conv 32 -> 32 (1x1), on a 1 x 16 x 32 x 32 float input.
ir::Graph two_convs() {
  testing::GraphBuilder b;
  const int x = b.input("image", {1, 16, 32, 32});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {32, 16, 3, 3})}, 1, "conv_a")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(ir::Op::Relu, {c1}, 1, "relu_a")[0];
  const int c2 = b.node(ir::Op::Conv, {r, b.weights("w2", {32, 32, 1, 1})}, 1, "conv_b")[0];
  b.output(c2);
  return b.g;
}

std::shared_ptr<plan::Program> compile_as(passes::Precision p) {
  const ir::Graph g = two_convs();
  plan::CompileOptions co;
  co.precision = p;
  if (p == passes::Precision::int8) {
    auto fp32 = plan::compile(g, quantize::calibration_options(co));
    EXPECT_TRUE(fp32.ok()) << fp32.status().message();
    auto q = quantize::calibrate(*fp32, [](const std::vector<runtime::TensorInfo>& ins) {
      std::vector<std::vector<runtime::HostTensor>> sets(2);
      for (uint64_t s = 0; s < 2; ++s)
        for (const auto& i : ins) sets[s].push_back(runtime::random_tensor(i, 3 + s));
      return Expected<std::vector<std::vector<runtime::HostTensor>>>(sets);
    }, {});
    EXPECT_TRUE(q.ok()) << q.status().message();
    co.activation_quant = std::make_shared<const quantize::QuantMap>(*q);
  }
  auto prog = plan::compile(g, co);
  EXPECT_TRUE(prog.ok()) << prog.status().message();
  return *prog;
}

const LayerCost& layer(const SimReport& r, const std::string& name) {
  auto it = std::find_if(r.layers.begin(), r.layers.end(), [&](const LayerCost& l) { return l.name == name; });
  EXPECT_NE(it, r.layers.end()) << name;
  return *it;
}

TEST(SimPrecision, EachPlanIsCostedInItsOwnPrecision) {
  const auto i8 = compile_as(passes::Precision::int8), bf = compile_as(passes::Precision::bf16),
             fp = compile_as(passes::Precision::fp32);
  ASSERT_EQ(i8->precision, "int8");
  const target::Target v5e = *target::builtin_preset("tpu-v5e");
  auto ri = simulate_program(*i8, v5e, SimOptions{});
  auto rb = simulate_program(*bf, v5e, SimOptions{});
  auto rf = simulate_program(*fp, v5e, SimOptions{});
  ASSERT_TRUE(ri.ok() && rb.ok() && rf.ok());
  EXPECT_EQ(ri->precision, "int8");
  EXPECT_EQ(rb->precision, "bf16");
  EXPECT_EQ(rf->precision, "fp32");
  for (const char* n : {"conv_a", "conv_b"}) {
    EXPECT_EQ(layer(*ri, n).precision, "int8") << n;
    EXPECT_EQ(layer(*rb, n).precision, "bf16") << n;
    EXPECT_EQ(layer(*rf, n).precision, "fp32") << n;
    // v5e: int8 at twice the bf16 rate, fp32 as three bf16 passes.
    EXPECT_LT(layer(*ri, n).compute_cycles, layer(*rb, n).compute_cycles) << n;
    EXPECT_NEAR(double(layer(*rf, n).compute_cycles) / layer(*rb, n).compute_cycles, 3.0, 0.01) << n;
  }
  EXPECT_NE(layer(*ri, "conv_a").fused.find("requant"), std::string::npos) << layer(*ri, "conv_a").fused;
  // The float input and the weights come from off-chip memory: 4 bytes an element in the fp32
  // plan, 2 in the bf16 plan (an accelerator stores its activations as bf16).
  EXPECT_GE(rf->offchip_bytes, 16.0 * 32 * 32 * 4);
  EXPECT_LT(rb->offchip_bytes, rf->offchip_bytes);
  // The int8 plan quantizes its float input in a step of its own: read 4 bytes, write 1.
  bool quantize = false;
  for (const auto& l : ri->layers)
    if (!l.matrix && l.onchip_bytes == 16.0 * 32 * 32 * (4 + 1)) quantize = true;
  EXPECT_TRUE(quantize);
  EXPECT_TRUE(ri->notes.empty());
  const std::string totals = format_totals(*ri);
  EXPECT_NE(totals.find("matrix layers at 2 int8"), std::string::npos) << totals;
}

TEST(SimPrecision, AChipWithoutTheRateRunsTheNearestExactOneAndSaysSo) {
  const auto i8 = compile_as(passes::Precision::int8);
  const target::Target v3 = *target::builtin_preset("tpu-v3");  // bf16 and fp32 MXUs only
  auto r = simulate_program(*i8, v3, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(layer(*r, "conv_a").precision, "bf16");
  EXPECT_EQ(layer(*r, "conv_a").plan_precision, "int8");
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("tpu-v3 has no int8 matrix rate: the plan's 2 int8 layers run at its bf16 rate"),
            std::string::npos)
      << r->notes[0];
  EXPECT_NE(format_layers(*r).find("int8>bf16"), std::string::npos);
  // Forcing a precision costs every layer at it, tensors at its size (the SCALE-Sim path).
  SimOptions forced;
  forced.precision = "bf16";
  auto f = simulate_program(*i8, v3, forced);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->precision, "bf16");
  EXPECT_EQ(layer(*f, "conv_a").precision, "bf16");
  // As the plan stores them, the float input is 4 bytes an element; forced, every tensor is 2.
  EXPECT_GE(r->offchip_bytes, 16.0 * 32 * 32 * 4);
  EXPECT_LT(f->offchip_bytes, r->offchip_bytes);
}

TEST(SimPrecision, GpusRunInt8OnTensorCores) {
  const auto i8 = compile_as(passes::Precision::int8), bf = compile_as(passes::Precision::bf16);
  const target::Target a100 = *target::builtin_preset("a100");
  auto ri = simulate_program(*i8, a100, SimOptions{});
  auto rb = simulate_program(*bf, a100, SimOptions{});
  ASSERT_TRUE(ri.ok() && rb.ok());
  EXPECT_EQ(layer(*ri, "conv_a").precision, "int8");
  EXPECT_FALSE(layer(*ri, "conv_a").detail.empty());  // the CTA tiling
  EXPECT_LE(layer(*ri, "conv_a").compute_cycles, layer(*rb, "conv_a").compute_cycles);
}

}  // namespace
}  // namespace systolic::sim
