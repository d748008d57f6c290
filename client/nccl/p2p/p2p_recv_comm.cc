// The receiving end: per socket, a loop that reads the next piece header as soon as it can
// (so a peer that goes away is noticed even with no receive posted), matches it with the
// posted receive of the same seq, checks it, and reads the piece straight into the caller's
// buffer.
#include "client/nccl/p2p/p2p_comm.h"

namespace rs::nccl::p2p {

Result<P2pRequest*> RecvCore::irecv(void* data, size_t capacity) {
  if (data == nullptr && capacity > 0)
    return invalidArgument("irecv of up to " + std::to_string(capacity) +
                           " bytes into a null buffer");
  return post(static_cast<std::byte*>(data), capacity);
}

void RecvCore::readHeader(Channel& ch) {
  ch.stream->asyncReadExactly(ch.inBytes.data(), ch.inBytes.size(),
                              counted([this, &ch](const std::error_code& ec, size_t) {
                                onHeader(ch, ec);
                              }));
}

void RecvCore::onHeader(Channel& ch, const std::error_code& error) {
  if (error) return fail(socketError(ch, "reading a piece header", error));
  const PieceHeader expected{static_cast<uint16_t>(ch.index), static_cast<uint16_t>(count_),
                             ch.nextSeq, 0};
  if (Status s = decodePieceHeader(ch.inBytes.data(), expected, &ch.in); !s.isOk())
    return fail(Status(s.code(), where(ch) + ": " + s.message()));
  match(ch);
}

void RecvCore::match(Channel& ch) {
  P2pRequest* r = nullptr;
  Status bad;
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    if (ch.nextSeq == nextSeq_) {  // no receive posted for this message yet
      ch.waiting = true;
      return;
    }
    r = active_[ch.nextSeq % kMaxRequestsInFlight];
    bad = checkFits(ch.in.seq, ch.in.totalBytes, r->size);
    if (bad.isOk() && !r->totalKnown) {
      r->totalKnown = true;
      r->total = ch.in.totalBytes;
    } else if (bad.isOk() && r->total != ch.in.totalBytes) {
      bad = protocolError("message " + std::to_string(ch.in.seq) + " has " +
                          std::to_string(ch.in.totalBytes) +
                          " bytes by this socket's header but " + std::to_string(r->total) +
                          " by another's");
    }
  }
  if (!bad.isOk()) return fail(Status(bad.code(), where(ch) + ": " + bad.message()));
  const PieceRange range = pieceRange(ch.in.totalBytes, ch.in.seq, count_, minStripe_, ch.index);
  if (range.length == 0) return pieceDone(ch, r);
  ch.stream->asyncReadExactly(r->data + range.offset, range.length,
                              counted([this, &ch, r](const std::error_code& ec, size_t) {
                                if (ec) return fail(socketError(ch, "reading a message", ec));
                                pieceDone(ch, r);
                              }));
}

void RecvCore::pieceDone(Channel& ch, P2pRequest* request) {
  {
    std::lock_guard lock(mu_);
    pieceDoneLocked(request, request->total);
    ++ch.nextSeq;
  }
  readHeader(ch);
}

P2pRecvComm::P2pRecvComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
P2pRecvComm::~P2pRecvComm() = default;

Result<P2pRequest*> P2pRecvComm::irecv(void* data, size_t capacity, int /*tag*/) {
  return impl_->core().irecv(data, capacity);
}

const std::string& P2pRecvComm::peerName() const { return impl_->core().peerName(); }

std::unique_ptr<P2pRecvComm> makeRecvComm(std::shared_ptr<P2pEngine> engine,
                                          std::vector<std::unique_ptr<transport::Stream>> streams,
                                          uint64_t minStripeBytes, std::string peerName) {
  auto core = std::make_shared<RecvCore>(std::move(streams), minStripeBytes, std::move(peerName));
  core->start();
  return std::make_unique<P2pRecvComm>(
      std::make_unique<P2pRecvComm::Impl>(std::move(engine), std::move(core)));
}

}  // namespace rs::nccl::p2p
