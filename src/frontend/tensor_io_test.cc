// Tests for tensor_io: .npy/.pb round trips, numpy- and ONNX-written files, malformed inputs.
#include "frontend/tensor_io.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace systolic::frontend {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using runtime::HostTensor;

class TensorIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tensor_io_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  // Expects load_tensor to fail with a message naming the file and containing `what`.
  static void expect_error(const std::string& p, const std::string& what) {
    auto r = load_tensor(p);
    ASSERT_FALSE(r.ok()) << p;
    const std::string m = r.status().message();
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
  fs::path dir_;
};

int64_t numel(const ir::Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

HostTensor make(DType dt, ir::Shape shape, uint32_t seed) {
  HostTensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.data.resize(numel(t.shape) * ir::dtype_size(dt));
  std::mt19937 rng(seed);
  for (auto& b : t.data) b = dt == DType::boolean ? rng() & 1 : rng() & 0xff;
  return t;
}

// A valid .npy image (float32 [2,3] = 0..5) used as the base for malformed variants.
std::string npy_f32_2x3(const std::string& descr = "<f4", const std::string& fortran = "False",
                        const std::string& shape = "(2, 3)") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran +
                       ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string s = std::string("\x93NUMPY\x01\x00", 8);
  s.push_back(static_cast<char>(header.size() & 0xff));
  s.push_back(static_cast<char>(header.size() >> 8));
  s += header;
  for (int i = 0; i < 6; ++i) {
    float f = static_cast<float>(i);
    s.append(reinterpret_cast<const char*>(&f), 4);
  }
  return s;
}

TEST_F(TensorIoTest, RoundTripsEveryDtypeAndShape) {
  const DType dtypes[] = {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8,
                          DType::i8,  DType::boolean, DType::f16, DType::u16, DType::i16};
  const ir::Shape shapes[] = {{}, {0}, {2, 0, 3}, {7}, {2, 3, 4}, {1, 3, 5, 5}};
  uint32_t seed = 1;
  for (DType dt : dtypes) {
    for (const auto& shape : shapes) {
      HostTensor t = make(dt, shape, seed++);
      SCOPED_TRACE(std::string(ir::dtype_name(dt)) + " rank " + std::to_string(shape.size()));
      ASSERT_TRUE(save_npy(path("t.npy"), t).ok());
      std::string npy = slurp(path("t.npy"));
      ASSERT_GE(npy.size(), 64u);
      std::size_t data_off = npy.size() - t.data.size();
      EXPECT_EQ(data_off % 64, 0u);
      EXPECT_EQ(npy[data_off - 1], '\n');
      EXPECT_EQ(npy[6], 1);  // format 1.0
      ASSERT_TRUE(save_pb(path("t.pb"), t, "x").ok());
      for (const char* f : {"t.npy", "t.pb"}) {
        auto r = load_tensor(path(f));
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ(r->dtype, dt) << f;
        EXPECT_EQ(r->shape, shape) << f;
        EXPECT_EQ(r->data, t.data) << f;
      }
    }
  }
}

TEST_F(TensorIoTest, FormatIsChosenByContentNotExtension) {
  HostTensor t = make(DType::f32, {2, 2}, 3);
  ASSERT_TRUE(save_npy(path("really_npy.pb"), t).ok());
  ASSERT_TRUE(save_pb(path("really_pb.npy"), t, "y").ok());
  for (const char* f : {"really_npy.pb", "really_pb.npy"}) {
    auto r = load_tensor(path(f));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->data, t.data);
  }
}

TEST_F(TensorIoTest, SaveRejectsInconsistentTensor) {
  HostTensor t = make(DType::f32, {2, 2}, 4);
  t.data.pop_back();
  EXPECT_FALSE(save_npy(path("bad.npy"), t).ok());
  EXPECT_FALSE(save_pb(path("bad.pb"), t, "x").ok());
  t.dtype = DType::bf16;
  t.data.resize(8);
  EXPECT_TRUE(save_pb(path("bf16.pb"), t, "x").ok());
  // numpy has no bfloat16: .npy gets the uint16 bits.
  for (int i = 0; i < 8; ++i) t.data[i] = static_cast<uint8_t>(i * 37);
  ASSERT_TRUE(save_npy(path("bf16.npy"), t).ok());
  auto back = load_tensor(path("bf16.npy"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->dtype, DType::u16);
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->data, t.data);
}

TEST_F(TensorIoTest, ReadsFilesWrittenByNumpy) {
  std::string script = path("gen.py");
  std::ofstream(script) << "import sys, numpy as np\n"
                           "from numpy.lib import format as F\n"
                           "d = sys.argv[1]\n"
                           "np.save(d + '/f4.npy', np.arange(24, dtype='<f4').reshape(2, 3, 4))\n"
                           "np.save(d + '/i8.npy', np.array([-5, 7, 1 << 40], dtype='<i8'))\n"
                           "np.save(d + '/b1.npy', np.array([[True, False], [False, True]]))\n"
                           "np.save(d + '/scalar.npy', np.float64(2.5))\n"
                           "np.save(d + '/empty.npy', np.zeros((0, 3), dtype=np.uint8))\n"
                           "with open(d + '/v2.npy', 'wb') as f:\n"
                           "    F.write_array(f, np.arange(4, dtype=np.int32), version=(2, 0))\n"
                           "np.save(d + '/fortran.npy', np.asfortranarray(np.ones((2, 3), 'f4')))\n"
                           "np.save(d + '/big.npy', np.arange(3, dtype='>f4'))\n";
  std::string cmd = "/usr/bin/python3 " + script + " " + dir_.string() + " 2>/dev/null";
  if (!fs::exists("/usr/bin/python3") || std::system(cmd.c_str()) != 0)
    GTEST_SKIP() << "python3 with numpy not available";

  auto f4 = load_tensor(path("f4.npy"));
  ASSERT_TRUE(f4.ok()) << f4.status().message();
  EXPECT_EQ(f4->dtype, DType::f32);
  EXPECT_EQ(f4->shape, (ir::Shape{2, 3, 4}));
  ASSERT_EQ(f4->data.size(), 96u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f4->as<float>()[i], static_cast<float>(i));

  auto i8 = load_tensor(path("i8.npy"));
  ASSERT_TRUE(i8.ok()) << i8.status().message();
  EXPECT_EQ(i8->dtype, DType::i64);
  EXPECT_EQ(i8->as<int64_t>()[0], -5);
  EXPECT_EQ(i8->as<int64_t>()[2], int64_t{1} << 40);

  auto b1 = load_tensor(path("b1.npy"));
  ASSERT_TRUE(b1.ok()) << b1.status().message();
  EXPECT_EQ(b1->dtype, DType::boolean);
  EXPECT_EQ(b1->data, (std::vector<uint8_t>{1, 0, 0, 1}));

  auto sc = load_tensor(path("scalar.npy"));
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ(sc->dtype, DType::f64);
  EXPECT_TRUE(sc->shape.empty());
  EXPECT_EQ(sc->as<double>()[0], 2.5);

  auto empty = load_tensor(path("empty.npy"));
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->shape, (ir::Shape{0, 3}));
  EXPECT_TRUE(empty->data.empty());

  auto v2 = load_tensor(path("v2.npy"));
  ASSERT_TRUE(v2.ok()) << v2.status().message();
  EXPECT_EQ(v2->dtype, DType::i32);
  EXPECT_EQ(v2->as<int32_t>()[3], 3);

  expect_error(path("fortran.npy"), "fortran_order");
  expect_error(path("big.npy"), "big-endian");

  // And numpy reads what we write.
  HostTensor t = make(DType::i32, {3, 2}, 9);
  ASSERT_TRUE(save_npy(path("ours.npy"), t).ok());
  std::string bytes;
  for (auto b : t.data) bytes += (bytes.empty() ? "" : ",") + std::to_string(b);
  std::string py = "/usr/bin/python3 -c \"import numpy as np, sys; a = np.load(sys.argv[1]); "
                   "ok = a.dtype == np.int32 and a.shape == (3, 2) and list(a.tobytes()) == "
                   "[int(x) for x in sys.argv[2].split(',')]; sys.exit(0 if ok else 1)\" " +
                   path("ours.npy") + " " + bytes;
  EXPECT_EQ(std::system(py.c_str()), 0);
}

TEST_F(TensorIoTest, ReadsOnnxBackendTestData) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/";
  if (!fs::exists(dir + "input_0.pb")) GTEST_SKIP() << "libonnx-testdata not installed";
  auto in = load_tensor(dir + "input_0.pb");
  auto out = load_tensor(dir + "output_0.pb");
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(in->dtype, DType::f32);
  EXPECT_EQ(in->shape, (ir::Shape{3, 4, 5}));
  ASSERT_EQ(in->data.size(), 60u * 4);
  ASSERT_EQ(out->data.size(), in->data.size());
  for (int i = 0; i < 60; ++i)
    EXPECT_EQ(out->as<float>()[i], std::max(in->as<float>()[i], 0.f));
}

TEST_F(TensorIoTest, ReadsTypedFieldsOfTensorProto) {
  auto save = [&](const onnx::TensorProto& tp, const std::string& name) {
    std::string s;
    tp.SerializeToString(&s);
    return write(name, s);
  };
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-2.f);
  auto rf = load_tensor(save(f, "f.pb"));
  ASSERT_TRUE(rf.ok()) << rf.status().message();
  EXPECT_EQ(rf->as<float>()[1], -2.f);

  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(3);
  for (int v : {-1, 0, 127}) i8.add_int32_data(v);
  auto ri = load_tensor(save(i8, "i8.pb"));
  ASSERT_TRUE(ri.ok()) << ri.status().message();
  EXPECT_EQ(ri->dtype, DType::i8);
  EXPECT_EQ(ri->data, (std::vector<uint8_t>{0xff, 0, 127}));

  onnx::TensorProto l;
  l.set_data_type(onnx::TensorProto::INT64);
  l.add_int64_data(-9);  // scalar
  auto rl = load_tensor(save(l, "l.pb"));
  ASSERT_TRUE(rl.ok()) << rl.status().message();
  EXPECT_TRUE(rl->shape.empty());
  EXPECT_EQ(rl->as<int64_t>()[0], -9);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(0.25);
  auto rd = load_tensor(save(d, "d.pb"));
  ASSERT_TRUE(rd.ok()) << rd.status().message();
  EXPECT_EQ(rd->as<double>()[0], 0.25);

  onnx::TensorProto i32;
  i32.set_data_type(onnx::TensorProto::INT32);
  i32.add_dims(2);
  i32.add_int32_data(5);
  auto r32 = load_tensor(save(i32, "short.pb"));
  EXPECT_FALSE(r32.ok());
  expect_error(path("short.pb"), "int32_data");

  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  s.add_string_data("hi");
  expect_error(save(s, "s.pb"), "string");

  onnx::TensorProto c;
  c.set_data_type(onnx::TensorProto::COMPLEX64);
  expect_error(save(c, "c.pb"), "data_type");

  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::FLOAT);
  raw.add_dims(4);
  raw.set_raw_data(std::string(15, '\0'));
  expect_error(save(raw, "raw.pb"), "raw_data");

  onnx::TensorProto neg;
  neg.set_data_type(onnx::TensorProto::FLOAT);
  neg.add_dims(-1);
  expect_error(save(neg, "neg.pb"), "shape");

  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) huge.add_dims(int64_t{1} << 40);
  expect_error(save(huge, "huge.pb"), "shape");

  onnx::TensorProto ext;
  ext.set_data_type(onnx::TensorProto::FLOAT);
  ext.set_data_location(onnx::TensorProto::EXTERNAL);
  expect_error(save(ext, "ext.pb"), "external");
}

TEST_F(TensorIoTest, MalformedFilesGiveErrors) {
  std::string good = npy_f32_2x3();
  ASSERT_TRUE(load_tensor(write("good.npy", good)).ok());

  expect_error(path("missing.npy"), "cannot open");
  expect_error(write("empty.npy", ""), "empty");
  expect_error(dir_.string(), dir_.string());  // a directory
  expect_error(write("magic_only.npy", "\x93NUMPY"), "truncated");
  expect_error(write("short_header.npy", good.substr(0, 40)), "truncated");
  expect_error(write("short_data.npy", good.substr(0, good.size() - 1)), "truncated");
  expect_error(write("extra_data.npy", good + "xxxx"), "does not match");
  expect_error(write("c8.npy", npy_f32_2x3("<c8")), "unsupported dtype");
  expect_error(write("str.npy", npy_f32_2x3("<U3")), "unsupported dtype");
  expect_error(write("fortran.npy", npy_f32_2x3("<f4", "True")), "fortran_order");
  expect_error(write("big.npy", npy_f32_2x3(">f4")), "big-endian");
  expect_error(write("shape.npy", npy_f32_2x3("<f4", "False", "(2, 4)")), "does not match");
  expect_error(write("neg.npy", npy_f32_2x3("<f4", "False", "(-2, 3)")), "malformed");
  expect_error(write("huge.npy", npy_f32_2x3("<f4", "False", "(99999999999999999999,)")),
               "malformed");
  expect_error(write("ovf.npy", npy_f32_2x3("<f4", "False", "(4294967296, 4294967296, 8)")),
               "shape");
  std::string v9 = good;
  v9[6] = 9;
  expect_error(write("v9.npy", v9), "version");
  std::string not_dict = good;
  not_dict[10] = '[';
  expect_error(write("not_dict.npy", not_dict), "malformed");
  std::string long_hlen = good;
  long_hlen[9] = '\x7f';
  expect_error(write("hlen.npy", long_hlen), "truncated");
  expect_error(write("garbage.pb", "this is not a tensor at all\n"), "");
  expect_error(write("ff.pb", std::string(64, '\xff')), "");

  // Every prefix and random corruption of valid files must error or load, never crash.
  HostTensor t = make(DType::f32, {3, 4}, 5);
  ASSERT_TRUE(save_pb(path("v.pb"), t, "v").ok());
  std::string pb = slurp(path("v.pb"));
  for (const std::string& base : {good, pb}) {
    for (std::size_t n = 0; n < base.size(); ++n) {
      auto r = load_tensor(write("prefix", base.substr(0, n)));
      EXPECT_FALSE(r.ok()) << "prefix of length " << n << " loaded";
    }
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
      std::string s = base;
      for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng());
      auto r = load_tensor(write("fuzz", s));
      if (r.ok()) {
        EXPECT_EQ(r->data.size(), numel(r->shape) * ir::dtype_size(r->dtype));
      }
    }
  }
}

}  // namespace
}  // namespace systolic::frontend
