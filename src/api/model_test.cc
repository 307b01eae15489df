// The public API: a model opened from .onnx runs byte for byte like a runtime session on its
// program (both run forms), the compile cache hits on a second open, the batch, threads and
// tuned defaults apply, a saved .plan reopens, image models take encoded images, and every
// misuse is an error naming what is wrong.
#include "systolic/systolic.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "api/internal.h"
#include "api/tune_store.h"
#include "base/cpu.h"
#include "image/image.h"
#include "image/test_images.h"
#include "runtime/session.h"
#include "tests/temp_dir.h"
#include "tests/tiny_onnx.h"
#include "tools/zoo/zoo.h"

namespace systolic {
namespace {

// A fresh SYSTOLIC_CACHE_DIR per test (restored after), so the user's cache and tuned
// configurations are neither read nor filled.
class ModelApi : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("SYSTOLIC_CACHE_DIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    dir_ = systolic::testing::scratch_dir(std::string("model_api_") +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("SYSTOLIC_CACHE_DIR", (dir_ + "/cache").c_str(), 1);
  }
  void TearDown() override {
    if (had_) setenv("SYSTOLIC_CACHE_DIR", old_.c_str(), 1);
    else unsetenv("SYSTOLIC_CACHE_DIR");
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string tiny() { return write("tiny.onnx", testing::tiny_conv_onnx(3)); }
  std::string dir_, old_;
  bool had_ = false;
};

ModelOptions untuned() {
  ModelOptions o;
  o.use_tuned = false;
  return o;
}

Tensor random_tensor(const TensorSpec& s, uint32_t seed) {
  Tensor t;
  t.dtype = s.dtype;
  t.shape = s.shape;
  t.data.resize(s.bytes());
  std::mt19937 rng(seed);
  if (s.dtype == DType::f32) {
    std::normal_distribution<float> d(0.f, 1.f);
    auto* f = reinterpret_cast<float*>(t.data.data());
    for (int64_t i = 0; i < s.elements(); ++i) f[i] = d(rng);
  } else {
    for (uint8_t& b : t.data) b = static_cast<uint8_t>(rng());
  }
  return t;
}

// The outputs of a runtime::Session on the model's program, for the same inputs.
std::vector<std::vector<uint8_t>> reference(const Model& m, const std::vector<Tensor>& in) {
  auto s = runtime::Session::create(api::program(m));
  EXPECT_TRUE(s.ok()) << s.status().message();
  std::vector<const void*> ip;
  for (const Tensor& t : in) ip.push_back(t.data.data());
  std::vector<std::vector<uint8_t>> out;
  for (const auto& o : (*s)->outputs()) out.emplace_back(o.bytes());
  std::vector<void*> op;
  for (auto& o : out) op.push_back(o.data());
  EXPECT_TRUE((*s)->run_into(ip, op).ok());
  return out;
}

void expect_same_specs(const Model& m) {
  auto s = runtime::Session::create(api::program(m));
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(m.inputs().size(), (*s)->inputs().size());
  for (std::size_t k = 0; k < m.inputs().size(); ++k) {
    EXPECT_EQ(m.inputs()[k].name, (*s)->inputs()[k].name);
    EXPECT_EQ(static_cast<int>(m.inputs()[k].dtype), static_cast<int>((*s)->inputs()[k].dtype));
    EXPECT_EQ(m.inputs()[k].shape, (*s)->inputs()[k].shape);
  }
  ASSERT_EQ(m.outputs().size(), (*s)->outputs().size());
  for (std::size_t k = 0; k < m.outputs().size(); ++k) {
    EXPECT_EQ(m.outputs()[k].name, (*s)->outputs()[k].name);
    EXPECT_EQ(m.outputs()[k].shape, (*s)->outputs()[k].shape);
  }
  EXPECT_DOUBLE_EQ(m.flops(), (*s)->flops());
}

// Both run forms give the runtime session's bytes.
void expect_runs_like_runtime(const Model& m, uint32_t seed) {
  std::vector<Tensor> in;
  for (std::size_t k = 0; k < m.inputs().size(); ++k) in.push_back(random_tensor(m.inputs()[k], seed + k));
  const auto want = reference(m, in);
  auto s = m.new_session(2);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t k = 0; k < in.size(); ++k) named.emplace_back(m.inputs()[k].name, in[k]);
  auto got = (*s)->run(named);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ((*got)[k].shape, m.outputs()[k].shape);
    EXPECT_EQ((*got)[k].data, want[k]) << "output " << k;
  }
  std::vector<const void*> ip;
  for (const Tensor& t : in) ip.push_back(t.data.data());
  std::vector<std::vector<uint8_t>> out;
  for (const TensorSpec& o : (*s)->outputs()) out.emplace_back(o.bytes(), 0xAB);
  std::vector<void*> op;
  for (auto& o : out) op.push_back(o.data());
  ASSERT_TRUE((*s)->run(ip, op).ok());
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(out[k], want[k]) << "output " << k;
}

TEST_F(ModelApi, ZooModelRunsLikeTheRuntimeAndHitsTheCacheTheSecondTime) {
  onnx::ModelProto proto;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 5, &proto).ok());
  const std::string path = write("mnv2.onnx", proto.SerializeAsString());
  auto m = Model::open(path, untuned());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Model& model = **m;
  EXPECT_EQ(model.path(), path);
  EXPECT_EQ(model.batch(), 1);
  EXPECT_EQ(model.precision(), "fp32");
  EXPECT_EQ(model.threads(), std::max(1, host_cpu().cores));
  EXPECT_EQ(model.instances(), 1);
  EXPECT_FALSE(model.image_input());
  EXPECT_TRUE(model.report().compiled);
  EXPECT_FALSE(model.report().cache_hit);
  EXPECT_EQ(model.report().cache_path.rfind(dir_ + "/cache/", 0), 0u) << model.report().cache_path;
  EXPECT_GT(model.report().compile_ms, 0);
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(model.inputs()[0].dtype, DType::f32);
  EXPECT_EQ(model.outputs()[0].shape, (std::vector<int64_t>{1, 1000}));
  EXPECT_GT(model.flops(), 1e8);
  expect_same_specs(model);
  expect_runs_like_runtime(model, 11);

  auto again = Model::open(path, untuned());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE((*again)->report().cache_hit);
  EXPECT_EQ((*again)->report().cache_path, model.report().cache_path);
  expect_runs_like_runtime(**again, 11);

  ModelOptions nocache = untuned();
  nocache.use_cache = false;
  auto fresh = Model::open(path, nocache);
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_FALSE((*fresh)->report().cache_hit);
  EXPECT_TRUE((*fresh)->report().cache_path.empty());
}

// A batch run as micro-batches (the network compiled for fewer items, run once per slice)
// gives what the whole batch gives: int8 byte for byte, fp32 within rounding (the kernels
// tile a smaller batch differently).
TEST_F(ModelApi, MicroBatchesComputeTheWholeBatch) {
  onnx::ModelProto proto;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 5, &proto).ok());
  const std::string path = write("mnv2.onnx", proto.SerializeAsString());
  for (const char* precision : {"fp32", "int8"}) {
    std::vector<std::vector<float>> outs;
    for (int64_t micro : {4, 1, 2, 0}) {
      ModelOptions o = untuned();
      o.batch = 4;
      o.micro_batch = micro;
      o.precision = precision;
      if (std::string(precision) == "int8") o.calibration = {"random:2"};
      auto m = Model::open(path, o);
      ASSERT_TRUE(m.ok()) << m.status().message();
      const plan::Program& p = *api::program(**m);
      EXPECT_EQ(p.micro_batch, micro == 0 ? p.micro_batch : micro);
      EXPECT_EQ((*m)->batch(), 4);
      EXPECT_EQ((*m)->inputs()[0].shape, (std::vector<int64_t>{4, 3, 224, 224}));
      EXPECT_EQ((*m)->outputs()[0].shape, (std::vector<int64_t>{4, 1000}));
      expect_same_specs(**m);
      auto s = (*m)->new_session();
      ASSERT_TRUE(s.ok()) << s.status().message();
      const Tensor in = random_tensor((*m)->inputs()[0], 3);
      std::vector<float> out(4 * 1000);
      ASSERT_TRUE((*s)->run({in.data.data()}, {out.data()}).ok());
      outs.push_back(out);
    }
    float peak = 0;
    for (float v : outs[0]) peak = std::max(peak, std::abs(v));
    for (std::size_t k = 1; k < outs.size(); ++k)
      for (std::size_t i = 0; i < outs[0].size(); ++i) {
        if (std::string(precision) == "int8") ASSERT_EQ(outs[k][i], outs[0][i]) << precision << " run " << k << " at " << i;
        else ASSERT_NEAR(outs[k][i], outs[0][i], 1e-5f * peak) << precision << " run " << k << " at " << i;
      }
  }
  ModelOptions odd = untuned();
  odd.batch = 4;
  odd.micro_batch = 3;
  auto bad = Model::open(path, odd);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not divide batch 4"), std::string::npos) << bad.status().message();
}

TEST_F(ModelApi, BatchAndThreadsOptions) {
  ModelOptions o = untuned();
  o.batch = 3;
  o.threads = 2;
  auto m = Model::open(tiny(), o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->batch(), 3);
  EXPECT_EQ((*m)->threads(), 2);
  EXPECT_EQ((*m)->inputs()[0].shape, (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ((*m)->outputs()[0].shape, (std::vector<int64_t>{3, 16, 1, 1}));
  EXPECT_EQ(api::runtime_session(**(*m)->new_session()).threads(), 2);
  expect_same_specs(**m);
  expect_runs_like_runtime(**m, 5);
  // The batch from a bound shape, and a contradiction.
  ModelOptions shaped = untuned();
  shaped.shapes["input"] = {2, 3, 32, 32};
  auto s = Model::open(tiny(), shaped);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ((*s)->batch(), 2);
  shaped.batch = 4;
  auto bad = Model::open(tiny(), shaped);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("contradicts"), std::string::npos) << bad.status().message();
}

TEST_F(ModelApi, SavedPlanReopensAndRunsTheSame) {
  ModelOptions o = untuned();
  o.batch = 2;
  auto m = Model::open(tiny(), o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string plan = dir_ + "/tiny.plan";
  ASSERT_TRUE((*m)->save(plan).ok());
  auto p = Model::open(plan, untuned());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE((*p)->report().compiled);
  EXPECT_EQ((*p)->batch(), 2);
  EXPECT_EQ((*p)->precision(), "fp32");
  expect_runs_like_runtime(**p, 8);
  // The same inputs give the same bytes through the .onnx's model and the plan's.
  Tensor x = random_tensor((*m)->inputs()[0], 4);
  auto a = (*(*m)->new_session(1))->run({{"input", x}});
  auto b = (*(*p)->new_session(1))->run({{"input", x}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].data, (*b)[0].data);
  // What a plan fixed cannot be asked for differently.
  ModelOptions other = untuned();
  other.batch = 4;
  auto wrong_batch = Model::open(plan, other);
  ASSERT_FALSE(wrong_batch.ok());
  EXPECT_NE(wrong_batch.status().message().find("compiled for batch 2"), std::string::npos);
  other = untuned();
  other.preprocess = "imagenet";
  auto wrong_pre = Model::open(plan, other);
  ASSERT_FALSE(wrong_pre.ok());
  EXPECT_NE(wrong_pre.status().message().find("compiled plan"), std::string::npos);
  other = untuned();
  other.precision = "int8";
  auto wrong_prec = Model::open(plan, other);
  ASSERT_FALSE(wrong_prec.ok());
  EXPECT_NE(wrong_prec.status().message().find("compiled for fp32"), std::string::npos);
  EXPECT_FALSE((*p)->save(dir_ + "/no/such/dir/x.plan").ok());
}

TEST_F(ModelApi, OpenErrorsSayWhatIsWrong) {
  const std::string missing = dir_ + "/missing.onnx";
  auto a = Model::open(missing);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find(missing), std::string::npos) << a.status().message();
  const std::string garbage = write("garbage.onnx", "this is not a model");
  auto b = Model::open(garbage);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("garbage.onnx"), std::string::npos) << b.status().message();
  const std::string cut = write("cut.plan", "SYSTPLAN\x05\x00\x00\x00 truncated");
  auto c = Model::open(cut);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cut.plan"), std::string::npos) << c.status().message();
  ModelOptions o = untuned();
  o.precision = "fp64";
  auto d = Model::open(tiny(), o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("fp64"), std::string::npos) << d.status().message();
  o = untuned();
  o.preprocess = "cifar";
  auto e = Model::open(tiny(), o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cifar"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("imagenet"), std::string::npos) << e.status().message();
  o = untuned();
  o.calibration = {"random:2"};
  auto f = Model::open(tiny(), o);  // calibration data without int8
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("int8"), std::string::npos) << f.status().message();
  o = untuned();
  o.batch = -1;
  EXPECT_FALSE(Model::open(tiny(), o).ok());
}

TEST_F(ModelApi, RunErrorsSayWhatIsWrong) {
  auto m = Model::open(tiny(), untuned());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto s = (*m)->new_session(1);
  ASSERT_TRUE(s.ok());
  Session& session = **s;
  Tensor good = random_tensor((*m)->inputs()[0], 1);
  auto message = [&](const std::vector<std::pair<std::string, Tensor>>& in) {
    auto r = session.run(in);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  Tensor wrong_shape = good;
  wrong_shape.shape = {1, 3, 16, 64};
  EXPECT_NE(message({{"input", wrong_shape}}).find("expected float32[1,3,32,32], got float32[1,3,16,64]"),
            std::string::npos);
  Tensor wrong_type = good;
  wrong_type.dtype = DType::u8;
  EXPECT_NE(message({{"input", wrong_type}}).find("got uint8"), std::string::npos);
  Tensor short_data = good;
  short_data.data.resize(100);
  EXPECT_NE(message({{"input", short_data}}).find("100"), std::string::npos);
  EXPECT_NE(message({{"nope", good}}).find("no input named 'nope'"), std::string::npos);
  EXPECT_NE(message({}).find("'input' was not given"), std::string::npos);
  EXPECT_NE(message({{"input", good}, {"input", good}}).find("twice"), std::string::npos);
  std::vector<uint8_t> out((*m)->outputs()[0].bytes());
  Status st = session.run({good.data.data(), good.data.data()}, {out.data()});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("1 input(s)"), std::string::npos) << st.message();
  st = session.run({nullptr}, {out.data()});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("null"), std::string::npos) << st.message();
  EXPECT_TRUE(session.run({good.data.data()}, {out.data()}).ok());
  EXPECT_FALSE((*m)->new_session(-1).ok());
  // A tensor model takes no images.
  std::vector<uint8_t> row(32 * 32 * 3);
  const uint8_t jpeg[4] = {0xFF, 0xD8, 0xFF, 0xE0};
  Status img = load_image(**m, jpeg, sizeof jpeg, row.data());
  EXPECT_FALSE(img.ok());
  EXPECT_NE(img.message().find("not images"), std::string::npos) << img.message();
}

TEST_F(ModelApi, ImageModelTakesEncodedImages) {
  ModelOptions o = untuned();
  o.preprocess = "imagenet";
  o.batch = 2;
  auto m = Model::open(tiny(), o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Model& model = **m;
  ASSERT_TRUE(model.image_input());
  EXPECT_EQ(model.inputs()[0].dtype, DType::u8);
  EXPECT_EQ(model.inputs()[0].shape, (std::vector<int64_t>{2, 32, 32, 3}));
  EXPECT_EQ(model.image().crop_h, 32);
  EXPECT_EQ(model.image().crop_w, 32);
  EXPECT_EQ(model.image().resize, 37);  // round(32 / 0.875)
  EXPECT_EQ(model.image().mean, ir::imagenet_preprocess().mean);
  EXPECT_EQ(model.image().std, ir::imagenet_preprocess().std);
  expect_same_specs(model);

  // Two encoded images into the two rows: the same bytes as decoding and cropping directly.
  const std::size_t row = 32 * 32 * 3;
  Tensor batch;
  batch.dtype = DType::u8;
  batch.shape = model.inputs()[0].shape;
  batch.data.resize(2 * row);
  const image::Image pics[2] = {image::testing::make_image(61, 45, image::testing::Pattern::smooth_noise, 2),
                                image::testing::make_image(40, 90, image::testing::Pattern::gradient)};
  std::vector<uint8_t> encoded[2];
  ASSERT_TRUE(image::encode_jpeg(pics[0], 90, &encoded[0]).ok());
  ASSERT_TRUE(image::encode_png(pics[1], &encoded[1]).ok());
  for (int k = 0; k < 2; ++k) {
    Status st = load_image(model, encoded[k].data(), encoded[k].size(), batch.data.data() + k * row);
    ASSERT_TRUE(st.ok()) << st.message();
    image::Image decoded;
    ASSERT_TRUE(image::decode(encoded[k].data(), encoded[k].size(), &decoded).ok());
    std::vector<uint8_t> want(row);
    image::Scratch scratch;
    ASSERT_TRUE(image::resize_center_crop(decoded, {37, 32, 32}, want.data(), &scratch).ok());
    EXPECT_EQ(std::vector<uint8_t>(batch.data.begin() + k * row, batch.data.begin() + (k + 1) * row), want);
  }
  auto s = model.new_session();
  ASSERT_TRUE(s.ok());
  auto out = (*s)->run({{"input", batch}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].data, reference(model, {batch})[0]);

  // Broken bytes are errors that say so.
  std::vector<uint8_t> dst(row);
  std::vector<uint8_t> cut(encoded[0].begin(), encoded[0].begin() + encoded[0].size() / 2);
  Status st = load_image(model, cut.data(), cut.size(), dst.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("JPEG"), std::string::npos) << st.message();
  const std::string text = "hello, not an image";
  st = load_image(model, text.data(), text.size(), dst.data());
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(st.message().empty());
  EXPECT_FALSE(load_image(model, nullptr, 0, dst.data()).ok());
}

TEST_F(ModelApi, TunedConfigurationIsTheDefault) {
  const std::string path = tiny();
  api::TunedConfig c;
  c.batch = 4;
  c.threads = 2;
  c.instances = 3;
  ASSERT_TRUE(api::save_tuned(path, "fp32", c).ok());
  auto m = Model::open(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->batch(), 4);
  EXPECT_EQ((*m)->threads(), 2);
  EXPECT_EQ((*m)->instances(), 3);
  EXPECT_EQ((*m)->inputs()[0].shape[0], 4);
  EXPECT_EQ((*m)->report().tuned_path, *api::tuned_path(path, "fp32"));
  // What is given wins, field by field.
  ModelOptions o;
  o.batch = 2;
  auto given = Model::open(path, o);
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_EQ((*given)->batch(), 2);
  EXPECT_EQ((*given)->threads(), 2);
  EXPECT_EQ((*given)->instances(), 3);
  auto off = Model::open(path, untuned());
  ASSERT_TRUE(off.ok());
  EXPECT_EQ((*off)->batch(), 1);
  EXPECT_EQ((*off)->instances(), 1);
  EXPECT_TRUE((*off)->report().tuned_path.empty());
  // A recommendation is per precision.
  ModelOptions bf16;
  bf16.precision = "bf16";
  auto other = Model::open(path, bf16);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ((*other)->batch(), 1);
  EXPECT_EQ((*other)->precision(), "bf16");
}

TEST_F(ModelApi, Int8OfAFloatModelCalibratesAndSaysOnWhat) {
  ModelOptions o = untuned();
  o.precision = "int8";
  std::vector<std::string> seen;
  api::OpenExtras ex;
  ex.note = [&](const std::string& n) { seen.push_back(n); };
  auto m = api::open_model(tiny(), o, ex);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->precision(), "int8");
  ASSERT_FALSE((*m)->report().notes.empty());
  EXPECT_NE((*m)->report().notes[0].find("random inputs"), std::string::npos) << (*m)->report().notes[0];
  EXPECT_EQ(seen, (*m)->report().notes);
  expect_runs_like_runtime(**m, 3);
  // A cache hit skips calibration, so it has nothing to say.
  auto again = Model::open(tiny(), o);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->report().cache_hit);
  EXPECT_TRUE((*again)->report().notes.empty());
}

TEST(ModelApiInfo, DtypesAndHostInfo) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_STREQ(dtype_name(DType::u8), "uint8");
  TensorSpec s{"x", DType::f32, {2, 3, 4}};
  EXPECT_EQ(s.elements(), 24);
  EXPECT_EQ(s.bytes(), 96u);
  const std::string info = host_info();
  for (const char* line : {"cpu ", "cores ", "kernels ", "fp32 peak", "fp32 conv "})
    EXPECT_NE(info.find(line), std::string::npos) << line << "\n" << info;
  // Every list ends in a reference kernel that takes the typical conv: "none" is a wrong list.
  for (const char* line : {"fp32 conv   none", "int8 conv   none", "bf16 conv   none"})
    EXPECT_EQ(info.find(line), std::string::npos) << line << "\n" << info;
}

}  // namespace
}  // namespace systolic
