// The tuning every TCP data connection gets, both ends alike: TCP_NODELAY, keep-alive, and the
// buffer sizes of TcpOptions.
#pragma once

#include <asio/ip/tcp.hpp>

#include "core/common/status.h"
#include "core/transport/options.h"

namespace rs::transport::tcp {

// Applies TCP_NODELAY and `options` to a connected socket.
Status configureSocket(asio::ip::tcp::socket& socket, const TcpOptions& options);

}  // namespace rs::transport::tcp
