#include "serve/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <mutex>

#include "inference.grpc.pb.h"
#include "serve/grpc_codec.h"

namespace systolic::serve {

namespace {

// A ModelInfer call: finished from the core's completion callback; a client that goes away
// (cancel, deadline, disconnect) sets the flag the core checks before computing the request.
class InferReactor final : public grpc::ServerUnaryReactor {
 public:
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  void OnCancel() override { cancelled->store(true, std::memory_order_relaxed); }
  void OnDone() override { delete this; }
};

class Service final : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit Service(Server& core) : core_(core) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* ctx, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* resp) override {
    resp->set_live(core_.live());
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* ctx, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* resp) override {
    resp->set_ready(core_.ready());
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* ctx, const inference::ModelReadyRequest* req,
                                       inference::ModelReadyResponse* resp) override {
    auto r = core_.model_ready(req->name(), req->version());
    if (auto* e = std::get_if<Error>(&r)) return done(ctx, grpc_status(*e));
    resp->set_ready(std::get<bool>(r));
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* ctx, const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* resp) override {
    resp->set_name(core_.name());
    resp->set_version(core_.version());
    for (const auto& x : core_.extensions()) resp->add_extensions(x);
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* ctx, const inference::ModelMetadataRequest* req,
                                          inference::ModelMetadataResponse* resp) override {
    auto r = core_.model_metadata(req->name(), req->version());
    if (auto* e = std::get_if<Error>(&r)) return done(ctx, grpc_status(*e));
    encode_model_metadata(std::get<serve::ModelMetadata>(r), resp);
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* ctx, const inference::ModelConfigRequest* req,
                                        inference::ModelConfigResponse* resp) override {
    auto r = core_.model_config_json(req->name(), req->version());
    if (auto* e = std::get_if<Error>(&r)) return done(ctx, grpc_status(*e));
    if (auto e = decode_model_config(std::get<std::string>(r), resp->mutable_config()))
      return done(ctx, grpc_status(*e));
    return done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx, const inference::ModelInferRequest* req,
                                       inference::ModelInferResponse* resp) override {
    auto* reactor = new InferReactor();
    // The call owns a mutable message until OnDone; moving the raw inputs out of it saves a
    // copy of every input (the API only hands out a const pointer).
    auto decoded = decode_infer_request(const_cast<inference::ModelInferRequest&>(*req));
    if (auto* e = std::get_if<Error>(&decoded)) {
      reactor->Finish(grpc_status(*e));
      return reactor;
    }
    auto cancelled = reactor->cancelled;
    core_.infer(
        std::move(std::get<InferRequest>(decoded)),
        [reactor, resp](std::variant<InferResponse, Error> r) {
          if (auto* e = std::get_if<Error>(&r)) {
            reactor->Finish(grpc_status(*e));
            return;
          }
          encode_infer_response(std::move(std::get<InferResponse>(r)), resp);
          reactor->Finish(grpc::Status::OK);
        },
        std::move(cancelled));
    return reactor;
  }

 private:
  static grpc::ServerUnaryReactor* done(grpc::CallbackServerContext* ctx, const grpc::Status& s) {
    auto* r = ctx->DefaultReactor();
    r->Finish(s);
    return r;
  }

  Server& core_;
};

std::string host_port(const std::string& address, int port) {
  // An IPv6 literal needs brackets before the port.
  if (address.find(':') != std::string::npos && address.front() != '[')
    return "[" + address + "]:" + std::to_string(port);
  return address + ":" + std::to_string(port);
}

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(Server& core) : service(core) {}
  Service service;  // declared first: destroyed after `server`, which calls into it
  std::unique_ptr<grpc::Server> server;
  std::mutex shutdown_mu;
  bool down = false;
};

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl, int port) : impl_(std::move(impl)), port_(port) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

Expected<std::unique_ptr<GrpcServer>> GrpcServer::start(Server& core, const GrpcOptions& o) {
  if (o.port < 0 || o.port > 65535) return Err("gRPC port %d is out of range", o.port);
  if (o.max_message_bytes <= 0) return Err("gRPC max message size must be positive");
  grpc::EnableDefaultHealthCheckService(true);
  auto impl = std::make_unique<Impl>(core);
  const std::string addr = host_port(o.address, o.port);
  grpc::ServerBuilder b;
  int bound = 0;
  b.AddListeningPort(addr, grpc::InsecureServerCredentials(), &bound);
  // gRPC sets SO_REUSEPORT by default, which would let a second server share a busy port
  // silently instead of failing.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.SetMaxReceiveMessageSize(o.max_message_bytes);
  b.SetMaxSendMessageSize(o.max_message_bytes);
  b.RegisterService(&impl->service);
  impl->server = b.BuildAndStart();
  if (!impl->server || bound == 0) return Err("gRPC: cannot listen on %s", addr.c_str());
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl), bound));
}

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(impl_->shutdown_mu);
  if (impl_->down) return;
  impl_->down = true;
  if (auto* h = impl_->server->GetHealthCheckService()) h->Shutdown();
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
}

}  // namespace systolic::serve
