#include "core/transport/tcp/tcp_listener.h"

#include "core/common/log.h"
#include "core/transport/tcp/address.h"
#include "core/transport/tcp/socket_options.h"
#include "core/transport/tcp/tcp_stream.h"

namespace rs::transport::tcp {
namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(50);
// Out of descriptors, every retry fails: one line per period, not twenty a second.

// The connection died in the backlog, or the process is short of descriptors or memory for a
// moment: keep listening, after a pause (an immediate retry would spin while it lasts).
bool passingAcceptError(const std::error_code& ec) {
  return ec == asio::error::connection_aborted || ec == asio::error::no_descriptors ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
         ec == asio::error::connection_reset || ec == std::errc::too_many_files_open_in_system ||
         ec == std::errc::protocol_error || ec == asio::error::try_again;
}

}  // namespace

TcpListener::TcpListener(asio::io_context& io, const TcpOptions& options)
    : options_(options), acceptor_(io), retry_(io) {}

TcpListener::~TcpListener() { close(); }

Result<std::unique_ptr<TcpListener>> TcpListener::open(asio::io_context& io,
                                                       const Endpoint& endpoint,
                                                       const TcpOptions& options,
                                                       PortZero portZero) {
  const std::string where = "cannot listen on " + endpoint.toString();
  if (endpoint.port == 0 && portZero == PortZero::kRefused)
    return invalidArgument(where + ": port 0 (any free port) is not allowed here");
  auto address = resolveNow(endpoint);
  if (!address) return invalidArgument(where + ": " + address.status().message());
  std::unique_ptr<TcpListener> listener(new TcpListener(io, options));
  asio::ip::tcp::acceptor& acceptor = listener->acceptor_;
  std::error_code ec;
  const char* step = "socket";
  acceptor.open(address->protocol(), ec);
  if (!ec) step = "SO_REUSEADDR", acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) step = "bind", acceptor.bind(*address, ec);
  if (!ec) step = "listen", acceptor.listen(asio::socket_base::max_listen_connections, ec);
  asio::ip::tcp::endpoint bound;
  if (!ec) step = "getsockname", bound = acceptor.local_endpoint(ec);
  if (ec) return ioError(where + ": " + step + ": " + ec.message());
  listener->local_ = toEndpoint(bound);
  listener->name_ = "tcp://" + listener->local_.toString();
  return listener;
}

void TcpListener::asyncAccept(AcceptHandler handler) {
  acceptor_.async_accept(
      [this, h = std::move(handler)](const std::error_code& ec,
                                      asio::ip::tcp::socket socket) mutable {
        // After close() the listener may be gone already: touch nothing of it.
        if (ec == asio::error::operation_aborted) return h(ec, nullptr);
        onAccept(ec, std::move(socket), std::move(h));
      });
}

void TcpListener::onAccept(const std::error_code& ec, asio::ip::tcp::socket socket,
                           AcceptHandler handler) {
  if (!acceptor_.is_open()) {  // closed while this accept was on its way
    std::error_code ignored;
    socket.close(ignored);
    return handler(asio::error::operation_aborted, nullptr);
  }
  if (ec && !passingAcceptError(ec)) return handler(ec, nullptr);
  if (ec) {
    logAcceptError(ec);
    retry_.expires_after(kAcceptRetry);
    retry_.async_wait([this, h = std::move(handler)](const std::error_code& e) mutable {
      if (e) return h(asio::error::operation_aborted, nullptr);  // closed: as above
      if (!acceptor_.is_open()) return h(asio::error::operation_aborted, nullptr);
      asyncAccept(std::move(h));
    });
    return;
  }
  if (Status s = configureSocket(socket, options_); !s.isOk()) {
    // A socket the kernel will not tune is dropped; the listener carries on.
    rs::logger().warn("{}: dropping {}: {}", name_, describePeer(remoteEndpoint(socket)), s.message());
    std::error_code ignored;
    socket.close(ignored);
    return asyncAccept(std::move(handler));
  }
  handler({}, std::make_unique<TcpStream>(std::move(socket)));
}

void TcpListener::logAcceptError(const std::error_code& ec) {
  acceptErrors_.fetch_add(1, std::memory_order_relaxed);
  const std::optional<uint64_t> unlogged = errorLog_.admit();
  if (!unlogged) return;
  rs::logger().warn("{}: accept failed: {}; retrying every {} ms ({} more accept errors since "
                    "the last such line; at most one line per {} s)",
                    name_, ec.message(), kAcceptRetry.count(), *unlogged,
                    std::chrono::duration_cast<std::chrono::seconds>(errorLog_.period()).count());
}

void TcpListener::close() {
  std::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

}  // namespace rs::transport::tcp
