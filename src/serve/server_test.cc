// The server core on a tiny conv model: batching over the ladder of compiled sizes, validation,
// the bounded queue, deadlines, cancellation, draining, repository reloads and metrics.
#include "serve/server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tests/temp_dir.h"
#include "tests/tiny_onnx.h"

namespace systolic::serve {
namespace {

using Result = std::variant<InferResponse, Error>;

std::string write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string tiny_model(const std::string& name, int64_t fixed_batch = 0) {
  static const std::string dir = testing::scratch_dir("serve");
  return write_file(dir + "/" + name + ".onnx", testing::tiny_conv_onnx(1, fixed_batch));
}

std::vector<float> random_rows(int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(static_cast<std::size_t>(rows * 3 * 32 * 32));
  for (float& x : v) x = d(rng);
  return v;
}

InferRequest request(const std::string& model, const std::vector<float>& x, int64_t rows) {
  InferRequest r;
  r.model = model;
  WireTensor t;
  t.name = "input";
  t.datatype = "FP32";
  t.shape = {rows, 3, 32, 32};
  t.data.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  r.inputs.push_back(std::move(t));
  return r;
}

Result infer_sync(Server& s, InferRequest r, std::shared_ptr<std::atomic<bool>> cancelled = nullptr) {
  std::promise<Result> p;
  auto f = p.get_future();
  s.infer(std::move(r), [&p](Result res) { p.set_value(std::move(res)); }, std::move(cancelled));
  return f.get();
}

std::unique_ptr<Server> make_server(ModelSettings d, int64_t fixed_batch = 0) {
  ServerOptions o;
  o.models = {{"tiny", tiny_model(fixed_batch ? "tiny_fixed" : "tiny", fixed_batch)}};
  o.use_tuned = false;
  d.threads = d.threads ? d.threads : 1;
  o.defaults = d;
  auto s = Server::create(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

uint64_t count_of(const std::string& metrics, const std::string& name) {
  const std::string key = name + "{model=\"tiny\",version=\"1\"} ";
  const auto at = metrics.find(key);
  return at == std::string::npos ? ~0ull : std::stoull(metrics.substr(at + key.size()));
}

// Row `row` of an answer's 16 outputs against the tiny model run alone on that row of x.
void expect_reference_row(Session& ref, const std::vector<float>& x, const float* got, int row) {
  std::vector<float> want(16);
  ASSERT_TRUE(ref.run({x.data() + row * 3 * 32 * 32}, {want.data()}).ok());
  for (int c = 0; c < 16; ++c) EXPECT_NEAR(got[c], want[c], 1e-5f * (1 + std::fabs(want[c]))) << row << " " << c;
}

TEST(ServeServer, MetadataAndConfigDescribeTheLadder) {
  ModelSettings d;
  d.max_batch_size = 4;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->ready());
  auto md = s->model_metadata("tiny", "");
  ASSERT_TRUE(std::holds_alternative<ModelMetadata>(md));
  const ModelMetadata m = std::get<ModelMetadata>(md);
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{-1, 3, 32, 32}));
  EXPECT_EQ(m.inputs[0].datatype, "FP32");
  EXPECT_EQ(m.platform, "onnx_onnxv1");
  auto cfg = s->model_config_json("tiny", "1");
  ASSERT_TRUE(std::holds_alternative<std::string>(cfg));
  EXPECT_NE(std::get<std::string>(cfg).find("\"max_batch_size\":4"), std::string::npos);
  EXPECT_NE(std::get<std::string>(cfg).find("\"preferred_batch_size\":[1,2,4]"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<Error>(s->model_metadata("tiny", "7")));
  EXPECT_EQ(std::get<Error>(s->model_metadata("nope", "")).code, Code::not_found);
}

TEST(ServeServer, MergedRowsMatchSingleRuns) {
  ModelSettings d;
  d.max_batch_size = 4;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  auto one = Model::open(tiny_model("tiny"), ModelOptions{});
  ASSERT_TRUE(one.ok());
  auto sess = (*one)->new_session(1);
  ASSERT_TRUE(sess.ok());
  const auto x = random_rows(3, 5);
  Result r = infer_sync(*s, request("tiny", x, 3));  // runs as 2 + 1
  ASSERT_TRUE(std::holds_alternative<InferResponse>(r)) << std::get<Error>(r).message;
  const auto& out = std::get<InferResponse>(r).outputs.at(0);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{3, 16, 1, 1}));
  ASSERT_EQ(out.data.size(), 3 * 16 * sizeof(float));
  for (int row = 0; row < 3; ++row)
    expect_reference_row(**sess, x, reinterpret_cast<const float*>(out.data.data()) + row * 16, row);
}

TEST(ServeServer, ConcurrentRequestsShareBatches) {
  ModelSettings d;
  d.max_batch_size = 4;
  d.max_queue_delay_us = 200000;  // generous: the 8 threads may start slowly on a loaded machine
  auto s = make_server(d);
  ASSERT_TRUE(s);
  std::vector<std::future<Result>> fs;
  const auto x = random_rows(1, 9);
  for (int i = 0; i < 8; ++i)
    fs.push_back(std::async(std::launch::async, [&] { return infer_sync(*s, request("tiny", x, 1)); }));
  for (auto& f : fs) EXPECT_TRUE(std::holds_alternative<InferResponse>(f.get()));
  // The gauge drops just after each answer is handed over: a client can see its answer first.
  std::string m = s->metrics_text();
  for (int i = 0; i < 200 && count_of(m, "nv_inference_pending_request_count") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    m = s->metrics_text();
  }
  EXPECT_EQ(count_of(m, "nv_inference_count"), 8u);
  EXPECT_EQ(count_of(m, "nv_inference_request_success"), 8u);
  EXPECT_LT(count_of(m, "nv_inference_exec_count"), 8u);
  EXPECT_EQ(count_of(m, "nv_inference_pending_request_count"), 0u);
  EXPECT_EQ(count_of(m, "systolic_inference_wide_exec_count"), 0u);  // one instance: nothing to widen
}

// With two single-thread instances, a lone request runs on the wide session (both threads);
// concurrent ones keep to their instances, every answer the reference's, and nothing stalls
// when wide and narrow runs meet.
TEST(ServeServer, ALoneRequestRunsOnEveryInstancesThreads) {
  ModelSettings d;
  d.max_batch_size = 4;
  d.instances = 2;
  d.threads = 1;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  auto one = Model::open(tiny_model("tiny"), ModelOptions{});
  ASSERT_TRUE(one.ok());
  auto sess = (*one)->new_session(1);
  ASSERT_TRUE(sess.ok());
  std::mutex ref_mu;  // one reference session for every client thread
  auto check = [&](const Result& r, const std::vector<float>& x) {
    ASSERT_TRUE(std::holds_alternative<InferResponse>(r)) << std::get<Error>(r).message;
    const auto& out = std::get<InferResponse>(r).outputs.at(0);
    ASSERT_EQ(out.data.size(), 16 * sizeof(float));
    std::lock_guard<std::mutex> lock(ref_mu);
    expect_reference_row(**sess, x, reinterpret_cast<const float*>(out.data.data()), 0);
  };
  for (uint32_t i = 0; i < 3; ++i) {
    const auto x = random_rows(1, 40 + i);
    check(infer_sync(*s, request("tiny", x, 1)), x);
  }
  EXPECT_EQ(count_of(s->metrics_text(), "systolic_inference_wide_exec_count"), 3u);

  std::vector<std::future<void>> fs;
  for (uint32_t i = 0; i < 24; ++i)
    fs.push_back(std::async(std::launch::async, [&, i] {
      const auto x = random_rows(1, 50 + i);
      check(infer_sync(*s, request("tiny", x, 1)), x);
    }));
  for (auto& f : fs) f.get();
  const std::string m = s->metrics_text();
  EXPECT_EQ(count_of(m, "nv_inference_request_success"), 27u);
  EXPECT_EQ(count_of(m, "nv_inference_count"), 27u);
  EXPECT_GE(count_of(m, "systolic_inference_wide_exec_count"), 3u);
}

TEST(ServeServer, RequestsQueuedBehindABusyWorkerStillWaitForCompany) {
  // The delay counts from when the worker is free: C, queued while the worker was busy for
  // longer than the delay (A's answer holds it), still merges with D, which arrives just after.
  ModelSettings d;
  d.max_batch_size = 2;
  d.max_queue_delay_us = 200000;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  const auto x = random_rows(1, 3);
  std::promise<void> a_answered;
  std::promise<Result> a, b, c, dd;
  s->infer(request("tiny", x, 1), [&](Result r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the worker stays busy
    a.set_value(std::move(r));
    a_answered.set_value();
  });
  s->infer(request("tiny", x, 1), [&](Result r) { b.set_value(std::move(r)); });
  s->infer(request("tiny", x, 1), [&](Result r) { c.set_value(std::move(r)); });
  auto late = std::async(std::launch::async, [&] {
    a_answered.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s->infer(request("tiny", x, 1), [&](Result r) { dd.set_value(std::move(r)); });
  });
  for (auto* p : {&a, &b, &c, &dd}) EXPECT_TRUE(std::holds_alternative<InferResponse>(p->get_future().get()));
  late.get();
  const std::string m = s->metrics_text();
  EXPECT_EQ(count_of(m, "nv_inference_count"), 4u);
  EXPECT_EQ(count_of(m, "nv_inference_exec_count"), 2u) << "C ran alone instead of waiting for D";
}

TEST(ServeServer, InvalidRequestsNeverQueue) {
  ModelSettings d;
  d.max_batch_size = 2;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  const auto x = random_rows(3, 1);
  auto expect_invalid = [&](InferRequest r, const char* needle) {
    Result res = infer_sync(*s, std::move(r));
    ASSERT_TRUE(std::holds_alternative<Error>(res)) << needle;
    EXPECT_EQ(std::get<Error>(res).code, Code::invalid_argument);
    EXPECT_NE(std::get<Error>(res).message.find(needle), std::string::npos) << std::get<Error>(res).message;
  };
  expect_invalid(request("tiny", x, 3), "max_batch_size");
  const auto x1 = random_rows(1, 1);
  auto r = request("tiny", x1, 1);
  r.inputs[0].datatype = "FP64";
  expect_invalid(r, "datatype");
  r = request("tiny", x1, 1);
  r.inputs[0].shape = {1, 3, 16, 64};
  expect_invalid(r, "shape");
  r = request("tiny", x1, 1);
  r.inputs[0].data.resize(10);
  expect_invalid(r, "bytes");
  r = request("tiny", x1, 1);
  r.inputs[0].name = "image";
  expect_invalid(r, "unexpected input");
  r = request("tiny", x1, 1);
  r.inputs.clear();
  expect_invalid(r, "missing");
  r = request("tiny", x1, 1);
  RequestedOutput nope;
  nope.name = "nope";
  r.outputs.push_back(nope);
  expect_invalid(r, "unknown output");
  Result res = infer_sync(*s, request("other", x, 1));
  EXPECT_EQ(std::get<Error>(res).code, Code::not_found);
  const std::string m = s->metrics_text();
  EXPECT_EQ(count_of(m, "nv_inference_count"), 0u);
  EXPECT_NE(m.find("reason=\"INVALID\"} 7"), std::string::npos) << m;
}

TEST(ServeServer, ClassificationReturnsTopKStrings) {
  ModelSettings d;
  d.max_batch_size = 2;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  auto r = request("tiny", random_rows(2, 3), 2);
  RequestedOutput o;
  o.name = std::get<ModelMetadata>(s->model_metadata("tiny", "")).outputs[0].name;
  o.classification = 3;
  r.outputs.push_back(o);
  Result res = infer_sync(*s, std::move(r));
  ASSERT_TRUE(std::holds_alternative<InferResponse>(res));
  const WireTensor& t = std::get<InferResponse>(res).outputs[0];
  EXPECT_EQ(t.datatype, "BYTES");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  // Six length-prefixed "score:index" strings, scores descending within a row.
  std::size_t at = 0;
  for (int row = 0; row < 2; ++row) {
    double prev = INFINITY;
    for (int k = 0; k < 3; ++k) {
      uint32_t n = 0;
      std::memcpy(&n, t.data.data() + at, 4);
      const std::string e = t.data.substr(at + 4, n);
      at += 4 + n;
      const double score = std::stod(e);
      EXPECT_LE(score, prev);
      prev = score;
      EXPECT_NE(e.find(':'), std::string::npos);
    }
  }
  EXPECT_EQ(at, t.data.size());
}

TEST(ServeServer, FullQueueIsRefusedAtOnce) {
  ModelSettings d;
  d.max_batch_size = 1;
  d.max_queue_size = 1;
  d.max_queue_delay_us = 0;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  std::atomic<int> ok{0}, full{0};
  std::vector<std::thread> ts;
  const auto x = random_rows(1, 2);
  for (int i = 0; i < 16; ++i)
    ts.emplace_back([&] {
      Result r = infer_sync(*s, request("tiny", x, 1));
      if (std::holds_alternative<InferResponse>(r)) ++ok;
      else if (std::get<Error>(r).code == Code::unavailable &&
               std::get<Error>(r).message.find("queue size") != std::string::npos) ++full;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok + full, 16);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(count_of(s->metrics_text(), "nv_inference_request_success"), static_cast<uint64_t>(ok.load()));
}

TEST(ServeServer, ExpiredAndCancelledRequestsAreNotComputed) {
  ModelSettings d;
  d.max_batch_size = 4;
  d.max_queue_delay_us = 20000;  // a short batch waits: the deadline passes first
  auto s = make_server(d);
  ASSERT_TRUE(s);
  auto r = request("tiny", random_rows(1, 4), 1);
  r.timeout_us = 1;
  Result res = infer_sync(*s, std::move(r));
  ASSERT_TRUE(std::holds_alternative<Error>(res));
  EXPECT_NE(std::get<Error>(res).message.find("timed out"), std::string::npos);
  auto gone = std::make_shared<std::atomic<bool>>(true);
  res = infer_sync(*s, request("tiny", random_rows(1, 4), 1), gone);
  ASSERT_TRUE(std::holds_alternative<Error>(res));
  EXPECT_NE(std::get<Error>(res).message.find("cancelled"), std::string::npos);
  const std::string m = s->metrics_text();
  EXPECT_EQ(count_of(m, "nv_inference_count"), 0u);
  EXPECT_NE(m.find("reason=\"CANCELED\"} 2"), std::string::npos);
}

// Nice values of this process's threads, from /proc/self/task/*/stat (field 19).
std::vector<int> thread_nice_values() {
  std::vector<int> v;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));  // fields 3 onwards
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i)
      if (i == 19) v.push_back(std::stoi(field));
  }
  return v;
}

// compute_nice lowers the workers and their sessions' pool threads, and nothing else.
TEST(ServeServer, ComputeThreadsRunAtTheirNiceValue) {
  const auto before = thread_nice_values();
  ASSERT_FALSE(before.empty());
  ServerOptions o;
  o.models = {{"tiny", tiny_model("tiny")}};
  o.use_tuned = false;
  o.compute_nice = 7;
  o.defaults.max_batch_size = 2;
  o.defaults.instances = 2;
  o.defaults.threads = 2;
  auto s = Server::create(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto during = thread_nice_values();
  // Two workers, each with a pool of two threads (the worker is one of them).
  EXPECT_GE(std::count(during.begin(), during.end(), 7), 4);
  EXPECT_EQ(during.size() - std::count(during.begin(), during.end(), 7), before.size());
  const auto x = random_rows(1, 3);
  EXPECT_TRUE(std::holds_alternative<InferResponse>(infer_sync(**s, request("tiny", x, 1))));
}

TEST(ServeServer, DrainRefusesNewWorkAndFinishesAdmitted) {
  ModelSettings d;
  d.max_batch_size = 4;
  d.max_queue_delay_us = 30000;
  auto s = make_server(d);
  ASSERT_TRUE(s);
  std::promise<Result> p;
  s->infer(request("tiny", random_rows(1, 6), 1), [&p](Result r) { p.set_value(std::move(r)); });
  s->begin_drain();
  EXPECT_FALSE(s->ready());
  Result late = infer_sync(*s, request("tiny", random_rows(1, 6), 1));
  ASSERT_TRUE(std::holds_alternative<Error>(late));
  EXPECT_EQ(std::get<Error>(late).code, Code::unavailable);
  EXPECT_TRUE(s->wait_idle(std::chrono::seconds(10)));
  EXPECT_TRUE(std::holds_alternative<InferResponse>(p.get_future().get()));
  const Server::Totals t = s->totals();
  EXPECT_EQ(t.succeeded, 1u);
  EXPECT_EQ(t.failed, 0u);
  EXPECT_EQ(t.refused, 1u);
}

TEST(ServeServer, AFixedBatchModelServesOneRequestAtATime) {
  auto s = make_server(ModelSettings{}, 1);
  ASSERT_TRUE(s);
  const auto m = std::get<ModelMetadata>(s->model_metadata("tiny", ""));
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_NE(std::get<std::string>(s->model_config_json("tiny", "")).find("\"max_batch_size\":0"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<InferResponse>(infer_sync(*s, request("tiny", random_rows(1, 1), 1))));
  Result two = infer_sync(*s, request("tiny", random_rows(2, 1), 2));
  ASSERT_TRUE(std::holds_alternative<Error>(two));
  EXPECT_EQ(std::get<Error>(two).code, Code::invalid_argument);
}

TEST(ServeServer, APlanServesSmallerBatchesPadded) {
  ModelOptions mo;
  mo.batch = 2;
  auto m = Model::open(tiny_model("tiny"), mo);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string plan = testing::scratch_dir("serve") + "/tiny_b2.plan";
  ASSERT_TRUE((*m)->save(plan).ok());
  ServerOptions o;
  o.models = {{"tiny", plan}};
  o.use_tuned = false;
  o.defaults.threads = 1;
  auto s = Server::create(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(std::get<ModelMetadata>((*s)->model_metadata("tiny", "")).platform, "systolic_plan");
  auto sess = (*m)->new_session(1);
  ASSERT_TRUE(sess.ok());
  const auto x = random_rows(2, 11);
  std::vector<float> want(2 * 16);
  ASSERT_TRUE((*sess)->run({x.data()}, {want.data()}).ok());
  // One row alone runs padded to the plan's batch of 2; its answer is the row's own.
  std::vector<float> first(x.begin(), x.begin() + 3 * 32 * 32);
  Result r = infer_sync(**s, request("tiny", first, 1));
  ASSERT_TRUE(std::holds_alternative<InferResponse>(r)) << std::get<Error>(r).message;
  const auto& out = std::get<InferResponse>(r).outputs.at(0);
  ASSERT_EQ(out.data.size(), 16 * sizeof(float));
  EXPECT_EQ(std::memcmp(out.data.data(), want.data(), 16 * sizeof(float)), 0);
  o.defaults.max_batch_size = 4;  // a plan's batch is fixed: asking for another is an error
  auto bad = Server::create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("compiled for batch 2"), std::string::npos) << bad.status().message();
}

// Outputs shaped by each run (NonZero here, detections in practice): requests are served one at
// a time and every response carries the shape its own run gave, for ONNX files and plans alike.
TEST(ServeServer, RunShapedOutputsAnswerWithEachRunsShape) {
  const std::string onnx = write_file(testing::scratch_dir("serve") + "/tiny_nonzero.onnx", testing::tiny_nonzero_onnx());
  auto m = Model::open(onnx, ModelOptions{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string plan = testing::scratch_dir("serve") + "/tiny_nonzero.plan";
  ASSERT_TRUE((*m)->save(plan).ok());
  for (const std::string& path : {onnx, plan}) {
    ServerOptions o;
    o.models = {{"tiny", path}};
    o.use_tuned = false;
    o.defaults.threads = 1;
    if (path == onnx) o.defaults.max_batch_size = 4;  // cannot apply: noted, and requests run alone
    auto s = Server::create(o);
    ASSERT_TRUE(s.ok()) << path << ": " << s.status().message();
    bool noted = false;
    for (const std::string& n : (*s)->load_notes()) noted = noted || n.find("one at a time") != std::string::npos;
    EXPECT_EQ(noted, path == onnx) << path;
    const auto md = std::get<ModelMetadata>((*s)->model_metadata("tiny", ""));
    ASSERT_EQ(md.outputs.size(), 3u);
    EXPECT_EQ(md.inputs[0].shape, (std::vector<int64_t>{1, 3, 8, 8}));
    EXPECT_EQ(md.outputs[1].datatype, "INT64");  // known before any run; the shape is not
    EXPECT_EQ(md.outputs[1].shape, (std::vector<int64_t>{-1}));
    EXPECT_NE(std::get<std::string>((*s)->model_config_json("tiny", "")).find("\"max_batch_size\":0"), std::string::npos);
    std::set<std::size_t> counts;
    for (uint32_t seed : {1u, 2u, 3u}) {
      std::mt19937 rng(seed);
      std::normal_distribution<float> dist;
      std::vector<float> x(3 * 8 * 8);
      for (float& v : x) v = dist(rng);
      InferRequest req;
      req.model = "tiny";
      WireTensor t;
      t.name = "input";
      t.datatype = "FP32";
      t.shape = {1, 3, 8, 8};
      t.data.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
      req.inputs.push_back(t);
      Result r = infer_sync(**s, req);
      ASSERT_TRUE(std::holds_alternative<InferResponse>(r)) << std::get<Error>(r).message;
      const auto& outs = std::get<InferResponse>(r).outputs;
      ASSERT_EQ(outs.size(), 3u);
      const auto& relu = outs[0];
      const auto& nz = outs[1];
      ASSERT_EQ(relu.shape, (std::vector<int64_t>{1, 4, 8, 8}));
      EXPECT_EQ(nz.datatype, "INT64");
      // One column per positive value of the relu, in row-major order.
      std::vector<int64_t> want;
      const float* y = reinterpret_cast<const float*>(relu.data.data());
      for (int64_t i = 0; i < 4 * 64; ++i)
        if (y[i] != 0.f) want.push_back(i);
      const int64_t n = static_cast<int64_t>(want.size());
      ASSERT_EQ(nz.shape, (std::vector<int64_t>{4, n}));
      ASSERT_EQ(nz.data.size(), static_cast<std::size_t>(4 * n) * sizeof(int64_t));
      const int64_t* idx = reinterpret_cast<const int64_t*>(nz.data.data());
      for (int64_t c = 0; c < n; ++c)
        EXPECT_EQ(((idx[c] * 4 + idx[n + c]) * 8 + idx[2 * n + c]) * 8 + idx[3 * n + c], want[c]) << c;
      const auto& pos = outs[2];
      ASSERT_EQ(pos.shape, (std::vector<int64_t>{n}));
      ASSERT_EQ(pos.datatype, "FP32");
      for (int64_t c = 0; c < n; ++c) EXPECT_EQ(reinterpret_cast<const float*>(pos.data.data())[c], y[want[c]]) << c;
      counts.insert(want.size());
      // Top-K strings need a fixed row length: refused before it queues, naming the output.
      RequestedOutput ro;
      ro.name = "pos";
      ro.classification = 3;
      req.outputs.push_back(ro);
      Result bad = infer_sync(**s, req);
      ASSERT_TRUE(std::holds_alternative<Error>(bad));
      EXPECT_EQ(std::get<Error>(bad).code, Code::invalid_argument);
      EXPECT_NE(std::get<Error>(bad).message.find("'pos'"), std::string::npos) << std::get<Error>(bad).message;
      EXPECT_NE(std::get<Error>(bad).message.find("shaped by each run"), std::string::npos) << std::get<Error>(bad).message;
    }
    EXPECT_GT(counts.size(), 1u) << "every input gave the same count: the test would not see a stale shape";
  }
}

TEST(ServeServer, RepositoryReloadKeepsServingAndAFailedLoadKeepsTheOldVersion) {
  const std::string repo = testing::scratch_dir("serve_repo");
  std::filesystem::remove_all(repo + "/tiny");  // a repeated run starts from version 1 again
  write_file(repo + "/tiny/1/model.onnx", testing::tiny_conv_onnx(1));
  write_file(repo + "/tiny/config.json", R"({"max_batch_size": 2, "threads": 1})");
  ServerOptions o;
  o.repository = repo;
  o.use_tuned = false;
  auto s = Server::create(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(std::get<ModelMetadata>((*s)->model_metadata("tiny", "")).versions.at(0), "1");
  write_file(repo + "/tiny/2/model.onnx", testing::tiny_conv_onnx(2));
  EXPECT_FALSE((*s)->load("tiny"));
  EXPECT_EQ(std::get<ModelMetadata>((*s)->model_metadata("tiny", "")).versions.at(0), "2");
  write_file(repo + "/tiny/config.json", R"({"max_batch_size": "two"})");
  auto e = (*s)->load("tiny");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("max_batch_size"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<InferResponse>(infer_sync(**s, request("tiny", random_rows(1, 1), 1))));
  EXPECT_FALSE((*s)->unload("tiny"));
  EXPECT_EQ(std::get<Error>(infer_sync(**s, request("tiny", random_rows(1, 1), 1))).code, Code::not_found);
  EXPECT_NE((*s)->repository_index_json().find("UNAVAILABLE"), std::string::npos);
}

TEST(ServeConfig, ReadsKeysAndNamesTheBadOne) {
  const std::string dir = testing::scratch_dir("serve_cfg");
  auto cfg = read_model_config(write_file(dir + "/a.json", R"({"precision": "int8", "max_batch_size": 8,
      "max_queue_delay_us": 500, "max_queue_size": 9, "instances": 2, "threads": 1, "preprocess": "imagenet",
      "labels": "l.txt"})"));
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->precision, "int8");
  EXPECT_EQ(cfg->max_batch_size, 8);
  EXPECT_EQ(cfg->max_queue_size, 9);
  EXPECT_EQ(cfg->instances, 2);
  EXPECT_EQ(cfg->labels, dir + "/l.txt");
  for (const char* bad : {R"({"max_batch_size": 0})", R"({"precision": "fp8"})", R"({"batch": 4})", "[1]", "{",
                          R"({"instances": 1.5})"}) {
    auto r = read_model_config(write_file(dir + "/b.json", bad));
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_FALSE(read_model_config(dir + "/missing.json").ok());
  EXPECT_FALSE(find_model(dir, "..").ok());
  EXPECT_FALSE(find_model(dir, "none").ok());
}

TEST(ServeMetrics, EachFamilyOnceAcrossModels) {
  ModelMetrics a, b;
  a.request_success = 3;
  a.queue_hist.observe(120);
  a.queue_hist.observe(7e6);
  const std::string t = render_metrics({{"a", "1", &a}, {"b", "2", &b}});
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = t.find(needle); at != std::string::npos; at = t.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("# TYPE nv_inference_request_success counter"), 1u);
  EXPECT_NE(t.find("nv_inference_request_success{model=\"a\",version=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("nv_inference_request_success{model=\"b\",version=\"2\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("nv_inference_queue_duration_histogram_us_bucket{model=\"a\",version=\"1\",le=\"100\"} 0\n"),
            std::string::npos);
  EXPECT_NE(t.find("nv_inference_queue_duration_histogram_us_bucket{model=\"a\",version=\"1\",le=\"250\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("nv_inference_queue_duration_histogram_us_bucket{model=\"a\",version=\"1\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("nv_inference_queue_duration_histogram_us_count{model=\"a\",version=\"1\"} 2\n"), std::string::npos);
}

}  // namespace
}  // namespace systolic::serve
