// Calibration tensor files: one input each, or several stacked on the first axis (one sample
// set per slice, in order); a file that is neither, or input files stacking different counts,
// is refused with the file named.
#include "quantize/calibration_data.h"

#include <gtest/gtest.h>

#include <cstring>

#include "frontend/tensor_io.h"
#include "tests/temp_dir.h"

namespace systolic::quantize {
namespace {

// A float tensor of `shape` holding first, first + 1, ...
std::string save(const std::string& name, ir::Shape shape, float first, ir::DType dtype = ir::DType::f32) {
  runtime::HostTensor t = runtime::HostTensor::zeros(dtype, std::move(shape));
  if (dtype == ir::DType::f32)
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = first + float(i);
  const std::string path = testing::scratch_dir("calibration_data") + "/" + name;
  EXPECT_TRUE(frontend::save_npy(path, t).ok()) << path;
  return path;
}

runtime::TensorInfo input(const std::string& name, ir::Shape shape) { return {name, ir::DType::f32, std::move(shape)}; }

Expected<std::vector<std::vector<runtime::HostTensor>>> load(const std::vector<std::string>& files,
                                                             const std::vector<runtime::TensorInfo>& inputs) {
  return load_samples(files, inputs, {}, 0, nullptr);
}

TEST(CalibrationData, StackedTensorFilesGiveOneSetPerSlice) {
  const std::string whole = save("whole.npy", {1, 2, 4}, 0), stack = save("stack.npy", {3, 2, 4}, 100);
  auto sets = load({whole, stack}, {input("x", {1, 2, 4})});
  ASSERT_TRUE(sets.ok()) << sets.status().message();
  ASSERT_EQ(sets->size(), 4u);  // the whole file, then the stack's three slices in order
  for (std::size_t s = 0; s < sets->size(); ++s) {
    const runtime::HostTensor& t = (*sets)[s][0];
    ASSERT_EQ(t.shape, (ir::Shape{1, 2, 4}));
    const float first = s == 0 ? 0.f : 100.f + 8.f * float(s - 1);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(t.as<float>()[i], first + float(i)) << "set " << s << " element " << i;
  }
  // A limit counts sets: the report's few samples from one stacked file.
  auto few = load_samples({stack}, {input("x", {1, 2, 4})}, {}, 2, nullptr);
  ASSERT_TRUE(few.ok()) << few.status().message();
  EXPECT_EQ(few->size(), 2u);
  // Files past the limit are not read (here one of another shape, refused where it is).
  few = load_samples({stack, save("other.npy", {2, 2, 5}, 0)}, {input("x", {1, 2, 4})}, {}, 2, nullptr);
  ASSERT_TRUE(few.ok()) << few.status().message();
  EXPECT_EQ(few->size(), 2u);
  // An input with a batch of 2: a file of 4 rows is two sets.
  sets = load({save("four.npy", {4, 2, 4}, 0)}, {input("x", {2, 2, 4})});
  ASSERT_TRUE(sets.ok()) << sets.status().message();
  ASSERT_EQ(sets->size(), 2u);
  EXPECT_EQ((*sets)[1][0].as<float>()[0], 16.f);
}

TEST(CalibrationData, FilesThatAreNeitherAreRefused) {
  const auto why = [](const Expected<std::vector<std::vector<runtime::HostTensor>>>& r) {
    return r.ok() ? std::string("loaded") : r.status().message();
  };
  // Three rows for a batch of 2, another row shape, another element type.
  for (const std::string& f : {save("three.npy", {3, 2, 4}, 0), save("wide.npy", {2, 2, 5}, 0),
                               save("ints.npy", {1, 2, 4}, 0, ir::DType::i64)}) {
    const std::string m = why(load({f}, {input("x", {2, 2, 4})}));
    EXPECT_NE(m.find(f), std::string::npos) << m;
    EXPECT_NE(m.find("stacked"), std::string::npos) << m;
  }
  // Two inputs whose files stack different counts.
  const std::string a = save("a.npy", {2, 2, 4}, 0), b = save("b.npy", {3, 3}, 0);
  const std::string m = why(load({a, b}, {input("x", {1, 2, 4}), input("y", {1, 3})}));
  EXPECT_NE(m.find("stack 2 and 3"), std::string::npos) << m;
}

}  // namespace
}  // namespace systolic::quantize
