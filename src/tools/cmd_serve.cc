// `systolic serve`: the KServe v2 inference server (REST on --http-port, gRPC on --grpc-port,
// Prometheus /metrics on the HTTP port). Argument parsing, start-up and the SIGTERM drain only;
// the server itself is the library's serve layer.
#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "serve/grpc_server.h"
#include "serve/http_server.h"
#include "serve/server.h"
#include "tools/commands.h"

namespace systolic::tools {
namespace {

struct ServeArgs {
  std::string repository;
  std::vector<std::string> models;
  std::string address = "0.0.0.0";
  int http_port = 8000, grpc_port = 8001;
  int http_threads = 2;
  int idle_timeout_s = 30;
  double grace_s = 30;
  bool no_tuned = false;
  int compute_nice = serve::ServerOptions{}.compute_nice;
  serve::ModelSettings defaults;
};

void run_serve(const ServeArgs& a) {
  serve::ServerOptions so;
  so.repository = a.repository;
  so.defaults = a.defaults;
  so.use_tuned = !a.no_tuned;
  so.compute_nice = a.compute_nice;
  for (const std::string& m : a.models) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      return fail(Err("--model %s: expected NAME=PATH", m.c_str()));
    so.models.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  // Signals go to a waiting thread, not to handlers: block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto server = serve::Server::create(so);
  if (!server.ok()) return fail(server.status());
  for (const std::string& n : (*server)->load_notes()) std::fprintf(stderr, "systolic: note: %s\n", n.c_str());
  serve::HttpOptions ho;
  ho.address = a.address;
  ho.port = a.http_port;
  ho.threads = a.http_threads;
  ho.idle_timeout = std::chrono::seconds(a.idle_timeout_s);
  auto http = serve::HttpServer::start(**server, ho);
  if (!http.ok()) return fail(http.status());
  serve::GrpcOptions go;
  go.address = a.address;
  go.port = a.grpc_port;
  auto grpc = serve::GrpcServer::start(**server, go);
  if (!grpc.ok()) return fail(grpc.status());
  std::fprintf(stderr, "systolic: serving on HTTP port %d and gRPC port %d\n", (*http)->port(), (*grpc)->port());
  std::fflush(stderr);

  int sig = 0;
  sigwait(&sigs, &sig);
  // Readiness off and new requests refused at once; everything admitted is finished.
  (*server)->begin_drain();
  std::fprintf(stderr, "systolic: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  const bool idle = (*server)->wait_idle(std::chrono::milliseconds(static_cast<int64_t>(a.grace_s * 1000)));
  (*grpc)->shutdown(std::chrono::milliseconds(1000));
  (*http)->stop();
  if (!idle) return fail(Err("requests were still running after the %.0f s grace period", a.grace_s));
  const auto t = (*server)->totals();
  std::fprintf(stderr, "systolic: stopped: %llu requests answered, %llu admitted but failed, %llu refused\n",
               static_cast<unsigned long long>(t.succeeded), static_cast<unsigned long long>(t.failed),
               static_cast<unsigned long long>(t.refused));
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "serve models over KServe v2 (HTTP/REST and gRPC) with dynamic batching");
  cmd->add_option("--model-repository", a->repository, "Triton-layout directory: NAME/VERSION/model.onnx|model.plan, "
                                                         "optional NAME/config.json");
  cmd->add_option("--model", a->models, "NAME=PATH of a .onnx or .plan (repeatable)");
  cmd->add_option("--address", a->address, "address to listen on (default 0.0.0.0)");
  cmd->add_option("--http-port", a->http_port, "HTTP/REST port (default 8000; 0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--grpc-port", a->grpc_port, "gRPC port (default 8001; 0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--http-threads", a->http_threads, "threads parsing HTTP requests (default 2)")->check(CLI::Range(1, 64));
  cmd->add_option("--idle-timeout", a->idle_timeout_s, "seconds a connection may stay idle or half-sent (default 30)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--grace-period", a->grace_s, "seconds SIGTERM waits for admitted requests (default 30)")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--compute-nice", a->compute_nice,
                  "nice steps the inference threads run below the network threads, which then answer first under full load "
                  "(default 10; 0: unchanged)")->check(CLI::Range(0, 19));
  cmd->add_flag("--no-tuned", a->no_tuned, "ignore the configuration saved by systolic tune");
  // Defaults for --model models and for config.json keys a repository model leaves out.
  cmd->add_option("--precision", a->defaults.precision, "fp32, bf16 or int8 (default: the model's)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd->add_option("--max-batch-size", a->defaults.max_batch_size, "largest merged batch (default: tune's, else 8)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-queue-delay-us", a->defaults.max_queue_delay_us,
                  "how long a short batch waits for more requests (default 0)")->check(CLI::Range(0, 10000000));
  cmd->add_option("--max-queue-size", a->defaults.max_queue_size,
                  "queued requests before 503 (default 4 x max batch x instances)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--instances", a->defaults.instances, "sessions per model (default: tune's, else 1)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--threads", a->defaults.threads, "threads per session (default: tune's, else every core)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--preprocess", a->defaults.preprocess, "imagenet: the model takes JPEG/PNG bytes or uint8 images")
      ->check(CLI::IsMember({"imagenet"}));
  cmd->add_option("--labels", a->defaults.labels, "labels file, one a line (classification extension)");
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace systolic::tools
