// SCALE-Sim compatibility: topology CSV parsing, its output-size rule, and its per-fold
// compute-cycle formulas on the sample topology and config under tests/data.
#include <gtest/gtest.h>

#include "sim/scalesim.h"
#include "target/scalesim_cfg.h"

namespace systolic::sim {
namespace {

const std::string kData = std::string(SYSTOLIC_SOURCE_DIR) + "/tests/data/";

TEST(ScaleSim, ParsesTopologyCsv) {
  auto layers = parse_topology_csv(kData + "scalesim_tiny.csv");
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  ASSERT_EQ(layers->size(), 2u);
  const TopologyLayer& c = (*layers)[0];
  EXPECT_EQ(c.name, "Conv1");
  EXPECT_EQ(c.ofmap_h(), 8);
  EXPECT_EQ(c.gemm().m, 64);
  EXPECT_EQ(c.gemm().k, 18);
  EXPECT_EQ(c.gemm().n, 8);
  // SCALE-Sim rounds the output size up: ceil((224 - 7 + 2) / 2) = 110 (not 109).
  auto stem = parse_topology_csv_text("Layer name,a,b,c,d,e,f,g,\nconv1,224,224,7,7,3,64,2,\n", "s.csv");
  ASSERT_TRUE(stem.ok());
  EXPECT_EQ((*stem)[0].ofmap_h(), 110);
}

TEST(ScaleSim, TopologyErrors) {
  auto short_row = parse_topology_csv_text("name,h,w\nc1,8,8,3,3\n", "t.csv");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.status().message().find("t.csv:2: expected 8 columns"), std::string::npos)
      << short_row.status().message();
  EXPECT_FALSE(parse_topology_csv_text("c1,8,8,3,3,2,x,1\n", "t.csv").ok());
  EXPECT_FALSE(parse_topology_csv_text("c1,2,2,3,3,2,4,1\n", "t.csv").ok());  // filter > ifmap
  EXPECT_FALSE(parse_topology_csv_text("Layer name, IFMAP Height\n", "t.csv").ok());  // no layers
  EXPECT_FALSE(parse_topology_csv("/nonexistent.csv").ok());
}

TEST(ScaleSim, ComputeCyclesFollowItsFormulas) {
  auto layers = parse_topology_csv(kData + "scalesim_tiny.csv");
  auto t = target::target_from_scalesim_cfg(kData + "scalesim_tiny.cfg");
  ASSERT_TRUE(layers.ok() && t.ok()) << t.status().message();
  EXPECT_EQ(t->rows, 8);
  EXPECT_EQ(t->dataflow, target::Dataflow::weight_stationary);
  SimOptions o;
  o.convention = Convention::scalesim;
  auto r = simulate_topology(*layers, *t, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Conv1 on 8x8 ws: Sr = K = 18 -> 3 row folds, Sc = N = 8 -> 1; T = M = 64:
  // 3 * (2*8 + 8 + 64 - 2) = 258.  FC1: K = 16 -> 2 folds, T = 1: 2 * (16 + 8 + 1 - 2) = 46.
  EXPECT_EQ(r->layers[0].compute_cycles, 258);
  EXPECT_EQ(r->layers[1].compute_cycles, 46);
  EXPECT_NEAR(r->layers[0].map.mapping_eff, 18.0 * 8 / (3 * 64), 1e-12);
  // os: Sr = M = 64 -> 8 folds, Sc = N = 8 -> 1, T = K = 18: 8 * (8 + 8 + 18 - 2) = 256.
  t->dataflow = target::Dataflow::output_stationary;
  EXPECT_EQ(simulate_topology(*layers, *t, o)->layers[0].compute_cycles, 256);
  // is: Sr = K = 18 -> 3, Sc = M = 64 -> 8 folds, T = N = 8: 24 * (16 + 8 + 8 - 2) = 720.
  t->dataflow = target::Dataflow::input_stationary;
  EXPECT_EQ(simulate_topology(*layers, *t, o)->layers[0].compute_cycles, 720);
  // The native model pipelines folds: fewer cycles for the same layer.
  t->dataflow = target::Dataflow::weight_stationary;
  EXPECT_LT(simulate_topology(*layers, *t, SimOptions{})->layers[0].compute_cycles, 258);
}

}  // namespace
}  // namespace systolic::sim
