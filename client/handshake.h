// A data stream's way in, on the member's side (proto/WIRE.md, "Authentication" and "A
// stream's conversation"): dial the reducer (a transport::Connector, which retries until the
// reducer is up), read its CHALLENGE and check its mode against this member's secret (a member
// with a secret never joins a reducer that anyone could join, and one without learns why it is
// refused), send the HELLO proven with the secret for the CHALLENGE's nonce, then read the
// HELLO_ACK, or the ERROR that refuses the stream, and check that the reducer takes this
// member's chunks. Dialing and the handshake together end within options.connectTimeout
// (RS_CONNECT_TIMEOUT_MS): a reducer that accepts and then stalls fails the stream with a
// timeout naming the reducer and the step it stalled in.
//
// With a fabric hub on its io thread, a stream that is neither a lane nor a redial asks for a
// fabric channel (proto/WIRE.md, "The fabric"): the HELLO carries the fabric flag, and after the
// HELLO_ACK the reducer's FABRIC_OFFER is taken (a channel opened and connected to its grant,
// FABRIC_ACCEPT with ours) or declined (FABRIC_DECLINE with the reason); a FABRIC_DECLINE from
// the reducer, or its refusal of the flag (a reducer that predates it: the dial and the
// handshake are done again without it, within the same timeout), leaves the stream on TCP. Any
// of these is reported with the stream, never as its failure.
//
// The connection (client/connection.h) starts one and takes the stream from it, as the
// reducer's session takes its stream from the reducer's handshake. Everything runs on the
// connection's io thread. The handshake reports once, and only after every handler it started
// has run, so that the stream it hands over has nothing pending on it.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "core/transport/connector.h"
#include "core/transport/frame_reader.h"
#include "core/transport/payload_channel.h"
#include "core/transport/pending_ops.h"
#include "core/transport/stream.h"
#include "core/wire/control_frames.h"
#include "core/wire/fabric_frames.h"
#include "core/wire/frame.h"
#include "rs/client.h"

namespace rs::transport::fabric {
class FabricHub;
class FabricChannel;
}  // namespace rs::transport::fabric

namespace rs::client {

class Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  // A stream through its handshake, ready for REDUCE frames.
  struct Handshaken {
    std::unique_ptr<transport::Stream> stream;
    // The reader the handshake read through: what it read past the HELLO_ACK is still in it.
    std::unique_ptr<transport::FrameReader> reader;
    // The stream's loss bound, from the HELLO_ACK (0: no heartbeats, no loss detection).
    std::chrono::milliseconds lossBound{0};
    // The stream's fabric channel, connected; null: its payloads go on TCP.
    std::shared_ptr<transport::PayloadChannel> channel;
    // Why a stream that asked for the fabric runs on TCP ("the reducer declined: ..."); empty
    // when it did not ask, or has the channel.
    std::string fabricNotUsed;
  };
  // The outcome: the stream, or why not (kAborted after cancel()).
  using Done = std::function<void(Result<Handshaken> outcome)>;

  // How a redial of a lost reducer differs (proto/FAILOVER.md, "A reducer comes back"): the
  // HELLO's rejoin flag, and its own bound on reaching the reducer and its handshake.
  struct Redial {
    std::chrono::milliseconds timeout{0};
  };
  // `options` and `group` must outlive the handshake. `name` names the stream in messages
  // ("reducer 2 (10.0.0.7:2222) stream 1"). `hub`: the io thread's fabric (null: none); a lane
  // or a redial never asks for it.
  Handshake(const ClientOptions& options, const GroupSpec& group, asio::io_context& io,
            uint32_t reducerIndex, uint32_t streamIndex, Endpoint endpoint, std::string name,
            std::optional<Redial> redial = std::nullopt,
            transport::fabric::FabricHub* hub = nullptr);

  // Dials and handshakes; `done` runs once, on the io thread, never inside start().
  void start(Done done);
  // Ends it early (the connection closed): `done` runs with kAborted once the handlers started
  // so far have run. Nothing once it has reported.
  void cancel();

 private:
  void onConnect(Result<std::unique_ptr<transport::Stream>> stream);
  void onDeadline();
  void readHeader();
  void onHeader(const std::error_code& ec);
  void onChallenge(const std::error_code& ec);
  void sendHello(const wire::Nonce& reducerNonce);
  void onHelloAck(const std::error_code& ec);
  void onErrorText(const std::error_code& ec);
  // After the HELLO_ACK of a HELLO with the fabric flag: FABRIC_OFFER or FABRIC_DECLINE (in_).
  void onFabricFrame();
  void onFabricOffer(const std::error_code& ec);
  void onFabricDecline(const std::error_code& ec);
  // Our answer to an offer, then the end of the handshake: FABRIC_ACCEPT with the channel, or
  // FABRIC_DECLINE with `why` (the stream on TCP).
  void acceptFabric();
  void declineFabric(const std::string& why);
  void sendFabricAnswer(std::vector<uint8_t> frame, bool thenProbe = false);
  // After our ACCEPT: a probe each way on the channel (wire::fabricProbe); once both went
  // through, the handshake is done on the fabric (probed()); else abandonFabric() declines
  // after all, and the stream runs over TCP.
  void startProbe();
  void probed();
  void abandonFabric(const std::string& why);
  // A reducer that refused the fabric flag (an older one): dial again without it.
  void redialWithoutFabric(const Status& refusal);
  // The first outcome wins: stops the dial and the timer, and closes the stream on failure.
  void finish(Status outcome);
  template <typename F>
  auto counted(F&& handler);
  // Reports the outcome once it is known and every handler has run.
  void opDone();

  const ClientOptions& options_;
  const GroupSpec& group_;
  asio::io_context& io_;
  const uint32_t reducerIndex_;
  const uint32_t streamIndex_;
  const Endpoint endpoint_;
  const std::string name_;
  const std::optional<Redial> redial_;
  // Reaching the reducer and the handshake, together: options.connectTimeout, or a redial's.
  const std::chrono::milliseconds timeout_;

  std::unique_ptr<transport::Connector> connector_;
  // Connecting ends by start() + options.connectTimeout; this timer holds the handshake to it.
  std::chrono::steady_clock::time_point deadline_;
  asio::steady_timer timer_;
  // The probe's own bound (options.fabricProbeTimeout, within deadline_).
  asio::steady_timer probeTimer_;
  const char* step_ = "";  // where the handshake is, for the timeout's message
  std::unique_ptr<transport::Stream> stream_;
  std::unique_ptr<transport::FrameReader> reader_;
  bool helloSent_ = false;  // after the reducer's CHALLENGE
  wire::FrameHeader in_;
  std::array<uint8_t, wire::kChallengePayloadSize> challengeBytes_{};
  wire::HelloFrame hello_;
  transport::ConstBuffer helloBuffers_[2]{};
  std::array<uint8_t, wire::kHelloAckPayloadSize> ackBytes_{};
  std::chrono::milliseconds lossBound_{0};  // from the HELLO_ACK
  std::string errorText_;

  transport::fabric::FabricHub* const hub_;
  bool askFabric_ = false;  // the HELLO carries the fabric flag
  bool ackRead_ = false;    // the HELLO_ACK is in: a fabric frame comes next
  uint32_t attempt_ = 0;    // dials so far: a handler of an earlier dial's stream is stale
  std::vector<uint8_t> fabricBytes_;  // FABRIC_OFFER's grant or FABRIC_DECLINE's reason
  std::vector<uint8_t> fabricAnswer_;  // our FABRIC_ACCEPT or FABRIC_DECLINE, being written
  transport::ConstBuffer answerBuffer_{};
  std::shared_ptr<transport::fabric::FabricChannel> channel_;
  std::string fabricNotUsed_;
  bool probing_ = false;  // our probe and the reducer's are on their way
  bool probeDelivered_ = false;
  bool probeArrived_ = false;
  wire::FabricProbe probeOut_{};  // ours, until its send is done
  // The streams of dials given up (their handlers may still be pending), kept until the end.
  std::vector<std::unique_ptr<transport::Stream>> oldStreams_;
  std::vector<std::unique_ptr<transport::FrameReader>> oldReaders_;

  Done done_;
  transport::PendingOps pendingOps_;
  bool finished_ = false;
  Status outcome_;
  bool reported_ = false;
};

}  // namespace rs::client
