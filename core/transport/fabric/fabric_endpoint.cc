#include "core/transport/fabric/fabric_endpoint.h"

#include <fmt/format.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <thread>

#include "core/transport/fabric/fabric_error.h"

namespace rs::transport::fabric {

struct FabricEndpoint::Op {
  fi_context2 context;  // first (FI_CONTEXT2): the provider's scratch space
  FabricOp op;
  uint64_t token;
  PeerId peer;  // kWrite, kSend; kNoPeer for a receive (from anyone)
  size_t bytes;
};

namespace {

constexpr FabricEndpoint::PeerId kNoPeer = ~FabricEndpoint::PeerId{0};

// Polls that found nothing before the wait starts sleeping between polls: a completion a few
// microseconds away costs no sleep, a peer that is away costs no spinning core.
constexpr int kSpinPolls = 2000;
constexpr auto kIdleSleep = std::chrono::microseconds(50);

}  // namespace

const char* fabricOpName(FabricOp op) {
  switch (op) {
    case FabricOp::kWrite: return "RMA write";
    case FabricOp::kSend: return "send";
    case FabricOp::kRecv: return "receive";
    case FabricOp::kRemoteWrite: return "incoming RMA write";
  }
  return "operation";
}

FabricEndpoint::FabricEndpoint(FabricDomain& domain, FabricEndpointOptions options)
    : domain_(domain), options_(std::move(options)) {}

Result<std::unique_ptr<FabricEndpoint>> FabricEndpoint::open(FabricDomain& domain,
                                                             FabricEndpointOptions options) {
  std::unique_ptr<FabricEndpoint> e(new FabricEndpoint(domain, std::move(options)));
  const std::string where = fmt::format("{} endpoint '{}'", domain.provider(), e->options_.name);
  fi_info* info = const_cast<fi_info*>(domain.info().get());  // libfabric takes it non-const
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_DATA;
  // Polled either way (poll() is also what makes progress); the fd only says when to poll.
  cq.wait_obj = e->options_.waitFd ? FI_WAIT_FD : FI_WAIT_NONE;
  // Room for every operation the queues can hold and the peers' writes the credits allow.
  cq.size = info->tx_attr->size + info->rx_attr->size;
  int rc = fi_cq_open(domain.domain(), &cq, &e->cq_, nullptr);
  if (rc != 0) return fabricError(where + ": fi_cq_open", rc);
  if (e->options_.waitFd) {
    rc = fi_control(&e->cq_->fid, FI_GETWAIT, &e->waitFd_);
    if (rc != 0) return fabricError(where + ": fi_control(FI_GETWAIT)", rc);
  }
  rc = fi_endpoint(domain.domain(), info, &e->ep_, nullptr);
  if (rc != 0) return fabricError(where + ": fi_endpoint", rc);
  rc = fi_ep_bind(e->ep_, &domain.av()->fid, 0);
  if (rc != 0) return fabricError(where + ": fi_ep_bind (address vector)", rc);
  rc = fi_ep_bind(e->ep_, &e->cq_->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) return fabricError(where + ": fi_ep_bind (completion queue)", rc);
  rc = fi_enable(e->ep_);
  if (rc != 0) return fabricError(where + ": fi_enable", rc);
  size_t len = 0;
  rc = fi_getname(&e->ep_->fid, nullptr, &len);
  if (rc != -FI_ETOOSMALL || len == 0 || len > FabricDomain::kMaxAddressBytes) {
    return fabricError(where + ": fi_getname (its length)", rc != 0 ? rc : -FI_EOTHER);
  }
  e->address_.resize(len);
  rc = fi_getname(&e->ep_->fid, e->address_.data(), &len);
  if (rc != 0) return fabricError(where + ": fi_getname", rc);
  e->address_.resize(len);
  return e;
}

FabricEndpoint::~FabricEndpoint() {
  std::vector<FabricCompletion> dropped;
  abort(abortedError("endpoint closed"), dropped);
  if (cq_ != nullptr) (void)closeFabricObject(&cq_->fid, "an endpoint's completion queue");
}

Result<FabricEndpoint::PeerId> FabricEndpoint::addPeer(std::span<const uint8_t> address,
                                                       std::string name) {
  // The peer runs the same provider (the handshake checked its name), so its address has the
  // length of ours.
  if (address.size() != address_.size()) {
    return invalidArgument(fmt::format("peer {}: its {} fabric address has {} bytes, ours {}",
                                       name, provider(), address.size(), address_.size()));
  }
  Result<fi_addr_t> a = domain_.insertPeer(address);
  if (!a.isOk()) {
    return Status(a.status().code(), fmt::format("peer {}: {}", name, a.status().message()));
  }
  peers_.push_back({*a, std::move(name)});
  return static_cast<PeerId>(peers_.size() - 1);
}

std::string FabricEndpoint::peerName(PeerId peer) const {
  if (peer == kNoPeer) return "any peer";
  return peer < peers_.size() ? peers_[peer].name : fmt::format("peer #{}", peer);
}

Status FabricEndpoint::post(Op* op, const std::function<ssize_t()>& call, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + options_.postTimeout;
  postFoundQueueFull_ = false;
  for (int idle = 0;; ++idle) {
    const ssize_t rc = call();
    if (rc == -FI_EAGAIN && options_.postTimeout.count() == 0) {
      // The caller retries after its next poll: progress is its loop's, not this call's.
      postFoundQueueFull_ = true;
      Status s = Status(StatusCode::kResourceExhausted,
                        fmt::format("{} endpoint '{}': {} of {} bytes to {}: the queue is full",
                                    provider(), options_.name, what, op->bytes,
                                    peerName(op->peer)));
      delete op;
      return s;
    }
    if (rc == 0) {
      pending_.insert(op);
      return Status::ok();
    }
    if (rc != -FI_EAGAIN) {
      Status s = fabricError(fmt::format("{} endpoint '{}': {} of {} bytes to {}", provider(),
                                         options_.name, what, op->bytes, peerName(op->peer)),
                             static_cast<int>(rc));
      delete op;
      return s;
    }
    // The queue is full: completions make room (and on manual-progress providers only reading
    // the queue moves anything).
    Status s = readQueue(64);
    if (!s.isOk() || std::chrono::steady_clock::now() >= deadline) {
      const std::string why = s.isOk() ? fmt::format("no room in the queue for {} ms",
                                                     options_.postTimeout.count())
                                       : s.message();
      const std::string message = fmt::format("{} endpoint '{}': {} of {} bytes to {}: {}",
                                              provider(), options_.name, what, op->bytes,
                                              peerName(op->peer), why);
      delete op;
      return s.isOk() ? timeoutError(message) : Status(s.code(), message);
    }
    if (idle > kSpinPolls) std::this_thread::sleep_for(kIdleSleep);
  }
}

Status FabricEndpoint::postWrite(PeerId peer, const RegisteredMemory& src, size_t srcOffset,
                                 size_t size, const RemoteBuffer& dst, uint64_t dstOffset,
                                 uint32_t immediate, uint64_t token) {
  if (!broken_.isOk()) return broken_;
  if (peer >= peers_.size()) return invalidArgument(fmt::format("RMA write to unknown peer #{}", peer));
  if (!src.isRegistered() || srcOffset > src.size() || size > src.size() - srcOffset) {
    return invalidArgument(fmt::format("RMA write to {}: [{}, +{}) outside the {} registered "
                                       "source bytes",
                                       peerName(peer), srcOffset, size, src.size()));
  }
  // The peer's buffer description came from the network: a write outside it is refused here,
  // before the provider (or the peer's memory) sees it.
  if (dstOffset > dst.size || size > dst.size - dstOffset || dst.address + dstOffset < dst.address) {
    return invalidArgument(fmt::format("RMA write to {}: [{}, +{}) outside its {}-byte buffer",
                                       peerName(peer), dstOffset, size, dst.size));
  }
  Op* op = new Op{{}, FabricOp::kWrite, token, peer, size};
  iovec iov{src.data() + srcOffset, size};
  void* desc = src.descriptor();
  fi_rma_iov rma{dst.address + dstOffset, size, dst.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = peers_[peer].address;
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->context;
  msg.data = immediate;
  uint64_t flags = FI_REMOTE_CQ_DATA | FI_COMPLETION;
  if (options_.deliveryComplete) flags |= FI_DELIVERY_COMPLETE;
  return post(op, [&] { return fi_writemsg(ep_, &msg, flags); }, "RMA write");
}

Status FabricEndpoint::postSend(PeerId peer, const RegisteredMemory& mem, size_t offset,
                                size_t size, uint64_t token) {
  if (peer >= peers_.size()) return invalidArgument(fmt::format("send to unknown peer #{}", peer));
  return postMessage(FabricOp::kSend, peer, mem, offset, size, token);
}

Status FabricEndpoint::postRecv(const RegisteredMemory& mem, size_t offset, size_t size,
                                uint64_t token) {
  return postMessage(FabricOp::kRecv, kNoPeer, mem, offset, size, token);
}

Status FabricEndpoint::postMessage(FabricOp kind, PeerId peer, const RegisteredMemory& mem,
                                   size_t offset, size_t size, uint64_t token) {
  if (!broken_.isOk()) return broken_;
  if (!mem.isRegistered() || offset > mem.size() || size > mem.size() - offset) {
    return invalidArgument(fmt::format("{} {} {}: [{}, +{}) outside the {} registered bytes",
                                       fabricOpName(kind), kind == FabricOp::kRecv ? "from" : "to",
                                       peerName(peer), offset, size, mem.size()));
  }
  Op* op = new Op{{}, kind, token, peer, size};
  iovec iov{mem.data() + offset, size};
  void* desc = mem.descriptor();
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = kind == FabricOp::kRecv ? FI_ADDR_UNSPEC : peers_[peer].address;
  msg.context = &op->context;
  if (kind == FabricOp::kRecv) {
    return post(op, [&] { return fi_recvmsg(ep_, &msg, FI_COMPLETION); }, "receive");
  }
  return post(op, [&] { return fi_sendmsg(ep_, &msg, FI_COMPLETION); }, "send");
}

FabricCompletion FabricEndpoint::completionOf(const fi_cq_data_entry& entry) {
  FabricCompletion c;
  Op* op = static_cast<Op*>(entry.op_context);
  // Only an operation we still hold is ours to read: a remote write's context is null (or, under
  // FI_RX_CQ_DATA, the receive it used up).
  const bool ours = op != nullptr && pending_.erase(op) == 1;
  if ((entry.flags & FI_REMOTE_WRITE) != 0) {
    c.op = FabricOp::kRemoteWrite;
    c.immediate = static_cast<uint32_t>(entry.data);
    c.bytes = entry.len;
    if (ours) {
      c.token = op->token;
      c.consumedRecv = true;
      delete op;
    }
    if ((entry.flags & FI_REMOTE_CQ_DATA) == 0) {
      c.status = protocolError(fmt::format("{} endpoint '{}': an incoming RMA write without "
                                           "immediate data",
                                           provider(), options_.name));
    }
    return c;
  }
  if (!ours) {
    c.op = FabricOp::kRecv;
    c.status = internalError(fmt::format("{} endpoint '{}': a completion for no operation we "
                                         "posted (flags {:#x})",
                                         provider(), options_.name, entry.flags));
    return c;
  }
  c.op = op->op;
  c.token = op->token;
  c.bytes = op->op == FabricOp::kRecv ? entry.len : op->bytes;
  delete op;
  return c;
}

FabricCompletion FabricEndpoint::errorCompletion(const fi_cq_err_entry& err) {
  FabricCompletion c;
  Op* op = static_cast<Op*>(err.op_context);
  const bool ours = op != nullptr && pending_.erase(op) == 1;
  std::string what;
  if (ours) {
    c.op = op->op;
    c.token = op->token;
    c.bytes = op->bytes;
    what = fmt::format("{} of {} bytes {} {}", fabricOpName(op->op), op->bytes,
                       op->op == FabricOp::kRecv ? "from" : "to", peerName(op->peer));
    delete op;
  } else {
    c.op = (err.flags & FI_REMOTE_WRITE) != 0 ? FabricOp::kRemoteWrite : FabricOp::kRecv;
    what = fmt::format("{} (flags {:#x})", fabricOpName(c.op), err.flags);
  }
  if (ep_ == nullptr) {
    // Flushed by abort()'s close: the operation failed for the reason the endpoint was closed
    // (and the provider's strerror must not be asked, its endpoint is gone).
    c.status = Status(broken_.code(), fmt::format("{} endpoint '{}': {}: {}", provider(),
                                                  options_.name, what, broken_.message()));
    return c;
  }
  char detail[256] = {0};
  // The provider's own words, where it has any (prov_errno 0 reads "Success").
  const char* said = err.prov_errno == 0
                         ? nullptr
                         : fi_cq_strerror(cq_, err.prov_errno, err.err_data, detail, sizeof detail);
  c.status = Status(fabricStatusCode(err.err),
                    fmt::format("{} endpoint '{}': {} failed: {} (fi error {}; provider: {})",
                                provider(), options_.name, what, fi_strerror(err.err), err.err,
                                said != nullptr && *said != '\0' ? said : "no detail"));
  return c;
}

Status FabricEndpoint::readQueue(size_t max) {
  if (cq_ == nullptr) return broken_;
  fi_cq_data_entry entries[16];
  size_t taken = 0;
  while (taken < max) {
    const ssize_t n = fi_cq_read(cq_, entries, std::min<size_t>(16, max - taken));
    if (n == -FI_EAGAIN) return Status::ok();
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      const ssize_t r = fi_cq_readerr(cq_, &err, 0);
      if (r < 0) {
        return fabricError(fmt::format("{} endpoint '{}': fi_cq_readerr", provider(),
                                       options_.name),
                           static_cast<int>(r));
      }
      ready_.push_back(errorCompletion(err));
      ++taken;
      continue;
    }
    if (n < 0) {
      broken_ = fabricError(fmt::format("{} endpoint '{}': fi_cq_read", provider(), options_.name),
                            static_cast<int>(n));
      return broken_;
    }
    for (ssize_t i = 0; i < n; ++i) ready_.push_back(completionOf(entries[i]));
    taken += static_cast<size_t>(n);
  }
  return Status::ok();
}

bool FabricEndpoint::tryWait() {
  if (cq_ == nullptr || waitFd_ < 0 || !ready_.empty()) return false;
  fid* fids[] = {&cq_->fid};
  return fi_trywait(domain_.fabric(), fids, 1) == 0;
}

Status FabricEndpoint::poll(std::vector<FabricCompletion>& out, size_t max) {
  if (ready_.size() < max && cq_ != nullptr) RS_RETURN_IF_ERROR(readQueue(max - ready_.size()));
  while (!ready_.empty() && max-- > 0) {
    out.push_back(std::move(ready_.front()));
    ready_.pop_front();
  }
  return Status::ok();
}

Result<FabricCompletion> FabricEndpoint::next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int idle = 0;; ++idle) {
    if (ready_.empty() && cq_ != nullptr) RS_RETURN_IF_ERROR(readQueue(16));
    if (!ready_.empty()) {
      FabricCompletion c = std::move(ready_.front());
      ready_.pop_front();
      return c;
    }
    if (ep_ == nullptr) return broken_.isOk() ? failedPrecondition("endpoint closed") : broken_;
    if (std::chrono::steady_clock::now() >= deadline) {
      return timeoutError(fmt::format("{} endpoint '{}': no completion in {} ms ({} operations "
                                      "pending)",
                                      provider(), options_.name, timeout.count(), pending_.size()));
    }
    if (idle > kSpinPolls) std::this_thread::sleep_for(kIdleSleep);
  }
}

Status FabricEndpoint::finishPending(std::chrono::milliseconds bound,
                                     std::vector<FabricCompletion>& out) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pending_.empty() || !ready_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Result<FabricCompletion> c = next(std::max(left, std::chrono::milliseconds(0)));
    if (c.isOk()) {
      out.push_back(std::move(*c));
      continue;
    }
    Status why = c.status().code() == StatusCode::kTimeout
                     ? timeoutError(fmt::format("not completed within {} ms", bound.count()))
                     : c.status();
    abort(why, out);
    return why;
  }
  return Status::ok();
}

void FabricEndpoint::abort(const Status& why, std::vector<FabricCompletion>& out) {
  if (ep_ != nullptr) {
    (void)closeFabricObject(&ep_->fid, "an endpoint");
    ep_ = nullptr;
    broken_ = why;
  }
  // What completed before the close still counts; entries for operations already reported are
  // dropped by readQueue's lookup in pending_.
  if (cq_ != nullptr) (void)readQueue(SIZE_MAX);
  while (!ready_.empty()) {
    out.push_back(std::move(ready_.front()));
    ready_.pop_front();
  }
  for (Op* op : pending_) {
    FabricCompletion c;
    c.op = op->op;
    c.token = op->token;
    c.bytes = op->bytes;
    c.status = Status(why.code(), fmt::format("{} endpoint '{}': {} of {} bytes {} {}: {}",
                                              provider(), options_.name, fabricOpName(op->op),
                                              op->bytes, op->op == FabricOp::kRecv ? "from" : "to",
                                              peerName(op->peer), why.message()));
    out.push_back(std::move(c));
    delete op;
  }
  pending_.clear();
}

}  // namespace rs::transport::fabric
