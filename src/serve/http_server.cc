#include "serve/http_server.h"

#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "serve/kserve_json.h"

namespace systolic::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::ordered_json;  // keys in the order the protocol documents them

struct HttpServer::Impl {
  Impl(Server& c, const HttpOptions& o) : core(c), opts(o) {}

  Server& core;
  HttpOptions opts;
  int port = 0;
  // Requests read and not yet answered; stop() waits for zero. Declared before the io_context so
  // sessions destroyed with it can still count down.
  std::mutex mu;
  std::condition_variable idle;
  int64_t busy = 0;
  bool stopped = false;
  std::atomic<bool> stopping{false};  // read by sessions: new requests get 503

  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  net::thread_pool blocking{1};  // repository load/unload: compiling a model must not hold an I/O thread
  std::vector<std::thread> threads;

  // Held from reading a request to the end of its response write.
  std::shared_ptr<void> busy_token() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++busy;
    }
    return std::shared_ptr<void>(nullptr, [this](void*) {
      std::lock_guard<std::mutex> lock(mu);
      if (--busy == 0) idle.notify_all();
    });
  }
};

namespace {

constexpr std::size_t kHeaderLimit = 64 << 10;
constexpr std::size_t kReadChunk = 64 * 1024;  // per connection
constexpr std::size_t kLingerBytes = 16 << 20;  // unread request bytes drained before closing
constexpr std::chrono::seconds kLingerTime{2};

std::vector<std::string_view> split_path(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::vector<std::string_view> parts;
  if (target.empty() || target[0] != '/') return parts;
  target.remove_prefix(1);
  while (true) {
    auto slash = target.find('/');
    parts.push_back(target.substr(0, slash));
    if (slash == std::string_view::npos) break;
    target.remove_prefix(slash + 1);
  }
  return parts;
}

json tensors_json(const std::vector<TensorMeta>& ts) {
  json a = json::array();
  for (const TensorMeta& t : ts) a.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return a;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& srv) : stream_(std::move(socket)), srv_(srv) {}

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

 private:
  using Response = http::response<http::string_body>;

  void read_header() {
    // Beast reads at most the buffer's free capacity at a time, and the parser empties it into
    // the body as it goes, so a 512-byte buffer would read a 600 KB image in ~1200 calls.
    if (buffer_.capacity() < kReadChunk) buffer_.reserve(kReadChunk);
    parser_.emplace();
    parser_->body_limit(srv_.opts.body_limit);
    parser_->header_limit(kHeaderLimit);
    stream_.expires_after(srv_.opts.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    auto& req = parser_->get();
    // libcurl waits a second for this before sending a large body.
    if (beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
      continue_ = http::response<http::empty_body>(http::status::continue_, req.version());
      stream_.expires_after(srv_.opts.idle_timeout);
      http::async_write(stream_, continue_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    stream_.expires_after(srv_.opts.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_read_error(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      close_after_ = true;
      return send_error(http::status::payload_too_large,
                        "request body exceeds the server's limit of " + std::to_string(srv_.opts.body_limit) + " bytes");
    }
    if (ec == http::error::header_limit) {
      close_after_ = true;
      return send_error(http::status::request_header_fields_too_large, "request headers exceed 64 KiB");
    }
    // A client that went away or stalled (end_of_stream, partial_message, timeout, reset) gets
    // no answer; any other parse failure gets a 400.
    if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      close_after_ = true;
      return send_error(http::status::bad_request, "malformed HTTP request: " + ec.message());
    }
    close();
  }

  void on_body(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    busy_ = srv_.busy_token();
    auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    if (srv_.stopping.load()) {
      close_after_ = true;
      return send_error(Error{Code::unavailable, "the server is shutting down"});
    }
    route(req);
  }

  void route(http::request<http::string_body>& req) {
    std::string_view target = req.target();
    auto p = split_path(target);
    http::verb m = req.method();
    auto is = [&](std::initializer_list<std::string_view> want) {
      return p.size() == want.size() && std::equal(want.begin(), want.end(), p.begin());
    };
    auto only = [&](http::verb v) {
      if (m == v) return true;
      send_method_not_allowed(v, target);
      return false;
    };
    Server& core = srv_.core;

    if (is({"v2"})) {
      if (!only(http::verb::get)) return;
      return send_json(http::status::ok,
                       dump({{"name", core.name()}, {"version", core.version()}, {"extensions", core.extensions()}}));
    }
    if (is({"v2", "health", "live"}) || is({"v2", "health", "ready"})) {
      if (!only(http::verb::get)) return;
      bool live = p[2] == "live";
      bool ok = live ? core.live() : core.ready();
      return send_json(ok ? http::status::ok : http::status::bad_request, dump({{live ? "live" : "ready", ok}}));
    }
    if (is({"metrics"})) {
      if (!only(http::verb::get)) return;
      return send(http::status::ok, core.metrics_text(), "text/plain; version=0.0.4");
    }
    if (is({"v2", "repository", "index"})) {
      if (!only(http::verb::post)) return;
      return send_json(http::status::ok, core.repository_index_json());
    }
    if (p.size() == 5 && p[0] == "v2" && p[1] == "repository" && p[2] == "models" &&
        (p[4] == "load" || p[4] == "unload")) {
      if (!only(http::verb::post)) return;
      return repository(std::string(p[3]), p[4] == "load");
    }
    if (p.size() >= 3 && p[0] == "v2" && p[1] == "models") {
      std::string model(p[2]), version;
      std::size_t at = 3;
      if (p.size() >= 5 && p[3] == "versions") {
        version = p[4];
        at = 5;
      }
      std::string_view tail = p.size() == at ? "" : p.size() == at + 1 ? p[at] : "?";
      if (tail == "") {
        if (!only(http::verb::get)) return;
        auto md = core.model_metadata(model, version);
        if (auto* e = std::get_if<Error>(&md)) return send_error(*e);
        const auto& d = std::get<ModelMetadata>(md);
        return send_json(http::status::ok, dump({{"name", d.name},
                                                 {"versions", d.versions},
                                                 {"platform", d.platform},
                                                 {"inputs", tensors_json(d.inputs)},
                                                 {"outputs", tensors_json(d.outputs)}}));
      }
      if (tail == "ready") {
        if (!only(http::verb::get)) return;
        auto r = core.model_ready(model, version);
        if (auto* e = std::get_if<Error>(&r)) return send_error(*e);
        bool ok = std::get<bool>(r);
        return send_json(ok ? http::status::ok : http::status::bad_request,
                         dump({{"name", model}, {"ready", ok}}));
      }
      if (tail == "config") {
        if (!only(http::verb::get)) return;
        auto c = core.model_config_json(model, version);
        if (auto* e = std::get_if<Error>(&c)) return send_error(*e);
        return send_json(http::status::ok, std::move(std::get<std::string>(c)));
      }
      if (tail == "infer") {
        if (!only(http::verb::post)) return;
        return infer(req, model, version);
      }
    }
    send_error(http::status::not_found,
               "no route for " + std::string(req.method_string()) + " " + std::string(target.substr(0, 200)));
  }

  void infer(http::request<http::string_body>& req, const std::string& model, const std::string& version) {
    auto decoded = decode_rest_request(req.body(), req["Inference-Header-Content-Length"], model, version);
    if (auto* e = std::get_if<Error>(&decoded)) return send_error(*e);
    InferRequest& r = std::get<InferRequest>(decoded);
    // What the reply's encoding needs from the request; the body itself can go now.
    InferRequest plan;
    plan.parameters = r.parameters;
    plan.outputs = r.outputs;
    parser_.reset();

    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    waiting_ = true;
    watch_disconnect();
    auto self = shared_from_this();
    srv_.core.infer(
        std::move(r),
        [self, plan = std::move(plan)](std::variant<InferResponse, Error> result) {
          // From a worker thread (or inline when refused): the write belongs on the connection's strand.
          net::post(self->stream_.get_executor(), [self, plan, result = std::move(result)]() mutable {
            self->on_infer_done(plan, std::move(result));
          });
        },
        cancelled_);
  }

  void watch_disconnect() {
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code ec) { self->on_readable(ec); });
  }

  void on_readable(beast::error_code ec) {
    if (!waiting_ || ec == net::error::operation_aborted) return;
    if (ec) {
      cancelled_->store(true);
      return;
    }
    char c;
    ssize_t n = ::recv(stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      cancelled_->store(true);
    } else if (n < 0) {
      watch_disconnect();
    }
    // n > 0: the next request arrived early; it is read after this response.
  }

  void on_infer_done(const InferRequest& plan, std::variant<InferResponse, Error> result) {
    waiting_ = false;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the disconnect watch
    if (cancelled_->load()) return close();
    if (auto* e = std::get_if<Error>(&result)) return send_error(*e);
    InferResponse& resp = std::get<InferResponse>(result);
    resolve_binary_outputs(plan, resp);
    auto enc = encode_rest_response(resp);
    if (auto* e = std::get_if<Error>(&enc)) return send_error(*e);
    RestBody& body = std::get<RestBody>(enc);
    auto res = make(http::status::ok, std::move(body.body),
                    body.binary ? "application/octet-stream" : "application/json");
    if (body.binary) res->set("Inference-Header-Content-Length", std::to_string(body.header_length));
    write(std::move(res));
  }

  void repository(std::string model, bool load) {
    auto self = shared_from_this();
    net::post(srv_.blocking, [self, model = std::move(model), load] {
      auto err = load ? self->srv_.core.load(model) : self->srv_.core.unload(model);
      net::post(self->stream_.get_executor(), [self, err] {
        if (err) return self->send_error(*err);
        self->send(http::status::ok, "", "application/json");
      });
    });
  }

  std::shared_ptr<Response> make(http::status st, std::string body, std::string_view content_type) {
    auto res = std::make_shared<Response>(st, version_);
    res->set(http::field::server, "systolic");
    res->set(http::field::content_type, content_type);
    res->body() = std::move(body);
    return res;
  }

  void send(http::status st, std::string body, std::string_view content_type) {
    write(make(st, std::move(body), content_type));
  }
  void send_json(http::status st, std::string body) { send(st, std::move(body), "application/json"); }

  void send_error(http::status st, const std::string& message) { send_json(st, error_json(message)); }

  void send_error(const Error& e) {
    auto res = make(http::status(http_status(e.code)), error_json(e.message), "application/json");
    // A full queue or a draining server: worth retrying shortly, perhaps on another replica.
    if (e.code == Code::unavailable) res->set(http::field::retry_after, "1");
    write(std::move(res));
  }

  void send_method_not_allowed(http::verb allowed, std::string_view target) {
    auto res = make(http::status::method_not_allowed,
                    error_json("method " + std::string(http::to_string(parser_->get().method())) + " is not allowed on " +
                               std::string(target.substr(0, 200)) + " (use " + std::string(http::to_string(allowed)) +
                               ")"),
                    "application/json");
    res->set(http::field::allow, http::to_string(allowed));
    write(std::move(res));
  }

  void write(std::shared_ptr<Response> res) {
    res->keep_alive(keep_alive_ && !close_after_);
    res->prepare_payload();  // always a Content-Length
    res_ = std::move(res);
    stream_.expires_after(srv_.opts.idle_timeout);
    http::async_write(stream_, *res_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    bool keep = res_ && res_->keep_alive();
    res_.reset();
    busy_.reset();
    if (ec) {
      if (cancelled_) cancelled_->store(true);
      return close();
    }
    if (!keep) return linger();
    read_header();
  }

  // Half-closes and drains what the client still sends (an unread body, say), so that closing
  // does not reset the connection before the client has read the response.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    drain();
  }

  void drain() {
    drain_buf_.resize(64 << 10);
    stream_.async_read_some(net::buffer(drain_buf_), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerBytes) return self->close();
      self->drain();
    });
  }

  void close() {
    busy_.reset();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& srv_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::empty_body> continue_;
  std::shared_ptr<Response> res_;
  std::shared_ptr<void> busy_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool close_after_ = false;
  bool waiting_ = false;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::vector<char> drain_buf_;
  std::size_t drained_ = 0;
};

void accept(HttpServer::Impl* s) {
  s->acceptor.async_accept(net::make_strand(s->ioc), [s](beast::error_code ec, tcp::socket socket) {
    if (!s->acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors, say: try again shortly rather than spin.
      s->accept_retry.expires_after(std::chrono::milliseconds(50));
      s->accept_retry.async_wait([s](beast::error_code e) {
        if (!e) accept(s);
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<Session>(std::move(socket), *s)->run();
    accept(s);
  });
}

}  // namespace

Expected<std::unique_ptr<HttpServer>> HttpServer::start(Server& core, const HttpOptions& o) {
  if (o.threads < 1) return Err("HTTP threads must be at least 1 (got %d)", o.threads);
  if (o.port < 0 || o.port > 65535) return Err("HTTP port %d is out of range", o.port);
  auto impl = std::make_unique<Impl>(core, o);
  beast::error_code ec;
  auto addr = net::ip::make_address(o.address, ec);
  if (ec) return Err("invalid HTTP address '%s': %s", o.address.c_str(), ec.message().c_str());
  tcp::endpoint ep(addr, static_cast<unsigned short>(o.port));
  auto& a = impl->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Err("cannot listen for HTTP on %s:%d: %s", o.address.c_str(), o.port, ec.message().c_str());
  impl->port = a.local_endpoint().port();
  accept(impl.get());
  for (int i = 0; i < o.threads; ++i) impl->threads.emplace_back([s = impl.get()] { s->ioc.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopped) return;
    s.stopped = true;
  }
  s.stopping = true;
  // The acceptor lives on its strand; close it there and wait, so no new session starts.
  std::promise<void> closed;
  net::post(s.acceptor.get_executor(), [&] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.idle.wait(lock, [&] { return s.busy == 0; });
  }
  s.blocking.join();  // idle by now: a load holds `busy` until its answer is written
  s.work.reset();
  s.ioc.stop();
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
}

HttpServer::~HttpServer() { stop(); }

}  // namespace systolic::serve
