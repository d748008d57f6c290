#include "core/transport/link_share.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/transport/stream.h"

namespace rs::transport {

std::shared_ptr<LinkShare> LinkShare::forProcess(uint64_t linkBytesPerSecond) {
  if (linkBytesPerSecond == 0) return nullptr;
  static std::mutex mu;
  static std::map<uint64_t, std::weak_ptr<LinkShare>> shares;
  std::lock_guard lock(mu);
  std::weak_ptr<LinkShare>& slot = shares[linkBytesPerSecond];
  std::shared_ptr<LinkShare> share = slot.lock();
  if (!share) {
    share = std::make_shared<LinkShare>(linkBytesPerSecond);
    slot = share;
  }
  return share;
}

uint64_t LinkShare::bytesPerSecondFromGbps(double gbps) {
  if (!(gbps > 0)) return 0;
  return static_cast<uint64_t>(std::llround(gbps * 1e9 / 8));
}

uint64_t LinkShare::pacedShare(uint64_t linkBytesPerSecond, uint32_t streams) {
  const uint32_t n = std::max<uint32_t>(1, streams);
  return std::max<uint64_t>(
      1, static_cast<uint64_t>(static_cast<double>(linkBytesPerSecond) * kPacedFraction) / n);
}

void LinkShare::Pacer::busy(uint64_t bytes) {
  if (!link_) return;
  if (!busy_) {
    busy_ = true;
    link_->busy_.fetch_add(1, std::memory_order_relaxed);
    if (far_) far_->busy_.fetch_add(1, std::memory_order_relaxed);
  }
  bytes_ += bytes;
  if (link_->bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > kUnpacedBytes)
    link_->paced_.store(true, std::memory_order_relaxed);
  if (far_) far_->bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void LinkShare::Pacer::done(uint64_t bytes) {
  if (!link_ || !busy_) return;
  bytes = std::min(bytes, bytes_);
  bytes_ -= bytes;
  link_->bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  if (far_) far_->bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

void LinkShare::Pacer::idle() {
  if (!link_ || !busy_) return;
  done(bytes_);
  busy_ = false;
  if (link_->busy_.fetch_sub(1, std::memory_order_relaxed) == 1)
    link_->paced_.store(false, std::memory_order_relaxed);
  if (far_) far_->busy_.fetch_sub(1, std::memory_order_relaxed);
}

void LinkShare::Pacer::refresh(Stream& stream) {
  if (!link_) return;
  // Unpaced (0) while the host has little under way; applied_ starts at 0 as if unpaced.
  const uint64_t share = !link_->paced() ? 0
                         : far_        ? std::min(link_->share(), far_->share())
                                       : link_->share();
  if (share == applied_) return;
  applied_ = share;
  stream.setPacingRate(share);
}

}  // namespace rs::transport
