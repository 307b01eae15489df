// The gRPC front end: KServe v2's GRPCInferenceService plus Triton's ModelConfig, on gRPC's
// callback API so a ModelInfer holds no thread while it waits in the core's queue; its reply is
// sent from the core's completion callback.
#pragma once
#include <chrono>
#include <climits>
#include <memory>
#include <string>

#include "serve/server.h"
#include "systolic/status.h"

namespace systolic::serve {

struct GrpcOptions {
  std::string address = "0.0.0.0";
  int port = 8001;                    // 0: an ephemeral port (see GrpcServer::port)
  int max_message_bytes = INT32_MAX;  // both directions; gRPC's own default is 4 MiB
};

class GrpcServer {
 public:
  // Listens and serves `core`, which must outlive the returned server.
  static Expected<std::unique_ptr<GrpcServer>> start(Server& core, const GrpcOptions& o);
  ~GrpcServer();  // shutdown(0) if not yet shut down

  int port() const { return port_; }

  // Health goes NOT_SERVING, new calls are refused, and calls still open after `grace` are
  // cancelled. Returns once every call has finished, so the core must still be running (its
  // completion callbacks finish the calls): drain the core first.
  void shutdown(std::chrono::milliseconds grace);

  struct Impl;

 private:
  explicit GrpcServer(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace systolic::serve
