// The sending end: per socket, a loop that writes each posted message's piece header and
// piece straight from the caller's buffer, several messages per gather write.
#include <algorithm>

#include "client/nccl/p2p/p2p_comm.h"

namespace rs::nccl::p2p {
namespace {
// Small messages queue up behind each other; one gather write takes up to this many.
constexpr uint64_t kMaxBatch = 16;
}  // namespace

Result<P2pRequest*> SendCore::isend(const void* data, size_t size) {
  if (data == nullptr && size > 0)
    return invalidArgument("isend of " + std::to_string(size) + " bytes from a null buffer");
  if (size > kMaxMessageBytes)
    return invalidArgument("isend of " + std::to_string(size) + " bytes: more than the " +
                           std::to_string(kMaxMessageBytes) + "-byte maximum");
  // The bytes are only read; the request type is shared with receives.
  return post(const_cast<std::byte*>(static_cast<const std::byte*>(data)), size);
}

void SendCore::startChannel(Channel& ch) {
  // The receiver never writes after the handshake, so this read ends only when it goes away:
  // an idle connection learns of that at once, not at its next send.
  ch.stream->asyncReadExactly(&ch.probe, 1,
                              counted([this, &ch](const std::error_code& ec, size_t) {
                                if (!ec)
                                  return fail(protocolError(
                                      where(ch) +
                                      ": the receiver sent bytes on a send-only connection"));
                                fail(socketError(ch, "waiting on the receiver", ec));
                              }));
}

void SendCore::pump(Channel& ch) {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    const uint64_t n = std::min(nextSeq_ - ch.nextSeq, kMaxBatch);
    if (n == 0) {
      ch.waiting = true;
      return;
    }
    ch.batch.clear();
    for (uint64_t i = 0; i < n; ++i)
      ch.batch.push_back(active_[(ch.nextSeq + i) % kMaxRequestsInFlight]);
  }
  ch.outHeaders.resize(ch.batch.size());
  ch.gather.clear();
  for (size_t i = 0; i < ch.batch.size(); ++i) {
    const P2pRequest* r = ch.batch[i];
    ch.outHeaders[i] = encodePieceHeader({static_cast<uint16_t>(ch.index),
                                          static_cast<uint16_t>(count_), r->seq, r->size});
    ch.gather.push_back({ch.outHeaders[i].data(), ch.outHeaders[i].size()});
    const PieceRange range = pieceRange(r->size, r->seq, count_, minStripe_, ch.index);
    if (range.length > 0) ch.gather.push_back({r->data + range.offset, range.length});
  }
  ch.stream->asyncWriteAll(ch.gather.data(), ch.gather.size(),
                           counted([this, &ch](const std::error_code& ec, size_t) {
                             onWritten(ch, ec);
                           }));
}

void SendCore::onWritten(Channel& ch, const std::error_code& error) {
  if (error) return fail(socketError(ch, "sending", error));
  {
    std::lock_guard lock(mu_);
    for (P2pRequest* r : ch.batch) pieceDoneLocked(r, r->size);
    ch.nextSeq += ch.batch.size();
  }
  ch.batch.clear();
  pump(ch);
}

P2pSendComm::P2pSendComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
P2pSendComm::~P2pSendComm() = default;

Result<P2pRequest*> P2pSendComm::isend(const void* data, size_t size, int /*tag*/) {
  return impl_->core().isend(data, size);
}

const std::string& P2pSendComm::peerName() const { return impl_->core().peerName(); }

std::unique_ptr<P2pSendComm> makeSendComm(std::shared_ptr<P2pEngine> engine,
                                          std::vector<std::unique_ptr<transport::Stream>> streams,
                                          uint64_t minStripeBytes, std::string peerName) {
  auto core = std::make_shared<SendCore>(std::move(streams), minStripeBytes, std::move(peerName));
  core->start();
  return std::make_unique<P2pSendComm>(
      std::make_unique<P2pSendComm::Impl>(std::move(engine), std::move(core)));
}

}  // namespace rs::nccl::p2p
