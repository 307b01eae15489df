// The HTTP/1.1 front end of the server: KServe v2 REST routes plus Triton's binary tensor data,
// model configuration, repository and metrics routes, on Boost.Beast. Asynchronous: `threads` I/O
// threads serve every connection, so idle keep-alive and slow clients cost no thread, and an
// overloaded model answers 503 at once. Each connection reads one request at a time (keep-alive,
// no pipelining in parallel), under an idle/slow-client deadline.
//
// While an inference is pending the connection is watched for the client going away (EOF or
// reset seen by a zero-byte peek when the socket turns readable); that sets the `cancelled` flag
// handed to Server::infer, so a queued request of a gone client is dropped. If the client instead
// sends its next request early, watching stops and a failed response write is the only sign.
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "serve/server.h"
#include "systolic/status.h"

namespace systolic::serve {

struct HttpOptions {
  std::string address = "0.0.0.0";
  int port = 8000;  // 0: an ephemeral port, see HttpServer::port()
  int threads = 2;
  std::size_t body_limit = 256u << 20;  // larger bodies get 413
  std::chrono::seconds idle_timeout{30};  // per read (headers, body) and per response write
};

class HttpServer {
 public:
  // Binds and starts serving; `core` must outlive the HttpServer.
  static Expected<std::unique_ptr<HttpServer>> start(Server& core, const HttpOptions& o);
  int port() const;  // the bound port
  // Stops accepting, waits for every request already read to be answered (inferences included:
  // Server::infer's `done` always comes), then closes every connection. Idempotent; not from an
  // I/O thread.
  void stop();
  ~HttpServer();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace systolic::serve
