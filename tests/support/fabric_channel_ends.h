// The two ends of a fabric channel's traffic in tests, each driven on its hub's io thread
// (fabric_hub_thread.h): a reader that takes payloads of known sizes piece by piece, and a
// writer that sends payloads in order. Their fields are read through FabricHubThread::call().
// Declare them before the hub threads: a hub's shutdown may still run their handlers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/common/status.h"
#include "core/transport/fabric/fabric_channel.h"

namespace rs::test {

class ChannelReader {
 public:
  // Reads payloads of `sizes` (each > 0) in order. With autoRelease each piece is released as
  // soon as it is taken; without, the test releases (and `held` counts what it has not).
  void start(std::shared_ptr<transport::fabric::FabricChannel> channel, std::vector<size_t> sizes,
             bool autoRelease = true) {
    channel_ = std::move(channel);
    sizes_ = std::move(sizes);
    autoRelease_ = autoRelease;
    next();
  }

  std::vector<uint8_t> bytes;        // everything received, in order
  std::vector<size_t> pieces;        // each piece's size
  std::vector<size_t> expectedPieces;  // min(slotBytes, left) as asked
  size_t held = 0;
  bool finished = false;
  Status error;

 private:
  void next() {
    while (left_ == 0 && payload_ < sizes_.size()) left_ = sizes_[payload_++];
    if (left_ == 0) {
      finished = true;
      return;
    }
    expectedPieces.push_back(std::min<size_t>(left_, channel_->ring().slotBytes));
    channel_->asyncNextPiece(left_, [this](const Status& s, std::span<const uint8_t> piece) {
      if (!s.isOk()) {
        error = s;
        return;
      }
      bytes.insert(bytes.end(), piece.begin(), piece.end());
      pieces.push_back(piece.size());
      left_ -= std::min(left_, piece.size());
      if (autoRelease_) {
        if (Status r = channel_->release(); !r.isOk()) {
          error = r;
          return;
        }
      } else {
        ++held;
      }
      next();
    });
  }

  std::shared_ptr<transport::fabric::FabricChannel> channel_;
  std::vector<size_t> sizes_;
  size_t payload_ = 0;
  size_t left_ = 0;
  bool autoRelease_ = true;
};

class ChannelWriter {
 public:
  // Sends each of `payloads` (kept alive here until done) in order.
  void start(std::shared_ptr<transport::fabric::FabricChannel> channel,
             std::vector<std::vector<uint8_t>> payloads) {
    channel_ = std::move(channel);
    payloads_ = std::move(payloads);
    for (const auto& p : payloads_) {
      channel_->send(p.data(), p.size(), [this](const Status& s) { results.push_back(s); });
    }
  }
  bool allOk() const {
    if (results.size() != payloads_.size()) return false;
    for (const auto& s : results) {
      if (!s.isOk()) return false;
    }
    return true;
  }

  std::vector<Status> results;  // one per payload, in the order done ran

 private:
  std::shared_ptr<transport::fabric::FabricChannel> channel_;
  std::vector<std::vector<uint8_t>> payloads_;
};

}  // namespace rs::test
