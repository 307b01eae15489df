// systolic_serve_load: bounded load on a running `systolic serve`, in C++ so that the load
// generator costs the shared cores little (bench/serve_load.py is the same with Python's
// clients). N clients (threads), each sending batch-1 requests for S seconds over gRPC
// (raw_input_contents) or REST (the binary tensor extension), back to back, or with --rate R
// open-loop (request k is due at k/R seconds; whichever client is free sends it); FP32 tensors,
// or with --datatype UINT8 an image plan's uint8 images (a quarter of the bytes). Prints one
// JSON line: requests, ok, rejected (503 / UNAVAILABLE), errors by kind, served throughput,
// latency percentiles of the successful requests and of the rejections. Each gRPC client has
// its own connection, as separate callers do; --shared-connection puts them all on one HTTP/2
// connection (one channel in one process), whose flow control then orders every upload.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "inference.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

struct Options {
  std::string protocol, addr, model, input_name = "input", shape = "1,3,224,224", datatype = "FP32";
  std::vector<int64_t> dims;  // parsed from shape
  int clients = 1;
  bool shared_connection = false;
  double seconds = 10, warmup = 1, rate = 0;
};

// What every client records, under one lock: latencies by outcome and error kinds.
struct Tally {
  std::mutex mu;
  std::vector<double> ok, rejected, errors;
  std::map<std::string, int> kinds;
  int64_t next_due = 0;
};

enum class Outcome { ok, rejected, error };

class Load {
 public:
  Load(const Options& o, std::string raw) : o_(o), raw_(std::move(raw)) {
    start_ = Clock::now() + to_dur(o.warmup);
    end_ = start_ + to_dur(o.seconds);
  }

  // Closed loop: now. Open loop: sleep until the next due time. nullopt past the end.
  std::optional<Clock::time_point> next_slot() {
    if (o_.rate > 0) {
      int64_t k;
      {
        std::lock_guard<std::mutex> lock(t_.mu);
        k = t_.next_due++;
      }
      std::this_thread::sleep_until(start_ - to_dur(o_.warmup) + to_dur(static_cast<double>(k) / o_.rate));
    }
    const auto now = Clock::now();
    if (now >= end_) return std::nullopt;
    return now;
  }

  void record(Clock::time_point t0, Outcome what, const std::string& kind = {}) {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(t_.mu);
    if (what == Outcome::error) t_.kinds[kind.substr(0, 120)]++;
    if (t0 < start_) return;  // warm-up
    (what == Outcome::ok ? t_.ok : what == Outcome::rejected ? t_.rejected : t_.errors).push_back(s);
  }

  void grpc_client() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 30);
    args.SetMaxSendMessageSize(1 << 30);
    // gRPC shares one connection among channels of equal arguments in a process unless told.
    if (!o_.shared_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(o_.addr, grpc::InsecureChannelCredentials(), args);
    auto stub = inference::GRPCInferenceService::NewStub(channel);
    inference::ModelInferRequest req;
    req.set_model_name(o_.model);
    auto* in = req.add_inputs();
    in->set_name(o_.input_name);
    in->set_datatype(o_.datatype);
    for (int64_t d : o_.dims) in->add_shape(d);
    req.add_raw_input_contents(raw_);
    while (auto t0 = next_slot()) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      inference::ModelInferResponse resp;
      const grpc::Status st = stub->ModelInfer(&ctx, req, &resp);
      if (st.ok())
        record(*t0, Outcome::ok);
      else if (st.error_code() == grpc::StatusCode::UNAVAILABLE)
        record(*t0, Outcome::rejected);
      else
        record(*t0, Outcome::error, std::to_string(st.error_code()) + ": " + st.error_message());
    }
  }

  void rest_client() {
    const auto colon = o_.addr.rfind(':');
    const std::string host = o_.addr.substr(0, colon), port = o_.addr.substr(colon + 1);
    nlohmann::json head = {{"inputs",
                            {{{"name", o_.input_name},
                              {"shape", o_.dims},
                              {"datatype", o_.datatype},
                              {"parameters", {{"binary_data_size", raw_.size()}}}}}},
                           {"parameters", {{"binary_data_output", true}}}};
    const std::string h = head.dump();
    http::request<http::string_body> req{http::verb::post, "/v2/models/" + o_.model + "/infer", 11};
    req.set(http::field::host, host);
    req.set(http::field::content_type, "application/octet-stream");
    req.set("Inference-Header-Content-Length", std::to_string(h.size()));
    req.body() = h + raw_;
    req.prepare_payload();
    net::io_context io;
    net::ip::tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(host, port);
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buf;
    while (auto t0 = next_slot()) {
      try {
        if (!stream) {
          stream.emplace(io);
          stream->connect(endpoints);
          stream->socket().set_option(net::ip::tcp::no_delay(true));
        }
        http::write(*stream, req);
        http::response_parser<http::string_body> parser;
        parser.body_limit(1ull << 30);
        http::read(*stream, buf, parser);
        const auto resp = parser.release();
        const unsigned code = resp.result_int();
        if (code == 200)
          record(*t0, Outcome::ok);
        else if (code == 503)
          record(*t0, Outcome::rejected);
        else
          record(*t0, Outcome::error, "HTTP " + std::to_string(code) + ": " + resp.body().substr(0, 100));
        if (!resp.keep_alive()) stream.reset();
      } catch (const std::exception& e) {
        record(*t0, Outcome::error, e.what());
        stream.reset();
        buf.clear();
      }
    }
  }

  nlohmann::json report() {
    auto pct = [](std::vector<double> v, double q) -> nlohmann::json {
      if (v.empty()) return nullptr;
      std::sort(v.begin(), v.end());
      const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(q / 100.0 * static_cast<double>(v.size())));
      return std::round(v[i] * 1e6) / 1e3;  // ms, 3 decimals
    };
    std::lock_guard<std::mutex> lock(t_.mu);
    return {{"protocol", o_.protocol},
            {"clients", o_.clients},
            {"seconds", o_.seconds},
            {"requests", t_.ok.size() + t_.rejected.size() + t_.errors.size()},
            {"ok", t_.ok.size()},
            {"rejected", t_.rejected.size()},
            {"errors", t_.errors.size()},
            {"throughput_per_s", static_cast<double>(t_.ok.size()) / o_.seconds},
            {"p50_ms", pct(t_.ok, 50)},
            {"p99_ms", pct(t_.ok, 99)},
            {"rejected_p50_ms", pct(t_.rejected, 50)},
            {"rejected_p99_ms", pct(t_.rejected, 99)},
            {"error_kinds", t_.kinds}};
  }

 private:
  static Clock::duration to_dur(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  const Options& o_;
  std::string raw_;
  Clock::time_point start_, end_;
  Tally t_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bounded batch-1 load on a running systolic serve"};
  app.add_option("protocol", o.protocol)->required()->check(CLI::IsMember({"grpc", "rest"}));
  app.add_option("--addr", o.addr, "HOST:PORT")->required();
  app.add_option("--model", o.model)->required();
  app.add_option("--input-name", o.input_name);
  app.add_option("--shape", o.shape, "comma-separated");
  app.add_option("--datatype", o.datatype, "FP32 (standard normal values) or UINT8 (an image's bytes)")
      ->check(CLI::IsMember({"FP32", "UINT8"}));
  app.add_option("--clients", o.clients)->check(CLI::Range(1, 4096));
  app.add_option("--seconds", o.seconds)->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup)->check(CLI::NonNegativeNumber);
  app.add_option("--rate", o.rate, "offered requests/s (0: closed loop)")->check(CLI::NonNegativeNumber);
  app.add_flag("--shared-connection", o.shared_connection, "gRPC: all clients on one connection");
  CLI11_PARSE(app, argc, argv);

  int64_t elems = 1;
  try {
    for (std::size_t pos = 0; pos <= o.shape.size();) {
      const std::size_t next = std::min(o.shape.find(',', pos), o.shape.size());
      const int64_t d = std::stoll(o.shape.substr(pos, next - pos));
      if (d <= 0 || d > (int64_t{1} << 28) / elems) throw std::out_of_range("dimension");
      elems *= d;
      o.dims.push_back(d);
      pos = next + 1;
    }
  } catch (const std::exception&) {
    std::fprintf(stderr, "systolic_serve_load: --shape %s is not a list of positive sizes\n", o.shape.c_str());
    return 2;
  }
  // Values from a fixed seed: the model's arithmetic, not the input, is timed.
  std::mt19937 rng(0);
  std::string raw;
  if (o.datatype == "UINT8") {
    raw.resize(static_cast<std::size_t>(elems));
    for (char& c : raw) c = static_cast<char>(rng() & 0xff);
  } else {
    std::vector<float> x(static_cast<std::size_t>(elems));
    std::normal_distribution<float> nd;
    for (float& v : x) v = nd(rng);
    raw.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  }
  Load load(o, std::move(raw));
  std::vector<std::thread> ts;
  for (int i = 0; i < o.clients; ++i)
    ts.emplace_back([&] { o.protocol == "grpc" ? load.grpc_client() : load.rest_client(); });
  for (auto& t : ts) t.join();
  std::printf("%s\n", load.report().dump().c_str());
  return 0;
}
