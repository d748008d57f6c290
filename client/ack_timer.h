// The RECEIVEDs of one io thread's connections that no REDUCE frame carried, sent within
// kAckDelay on one timer (client/connection.h). A connection acknowledges a chunk's result in
// front of the next REDUCE frame it writes on that stream, which costs no write and no wake-up
// of the reducer of its own: a stream often carries the next collective's chunk soon after.
// When none comes, this timer sends the RECEIVED alone, about kAckDelay after it became due
// (Connection::acknowledgeNow); one timer for the thread (core/transport/delayed_calls.h).
#pragma once

#include <chrono>

#include "core/transport/delayed_calls.h"

namespace rs::client {

class Connection;

// Long enough to catch the next small collective on a stream that the chunks rotate over (a
// collective of R chunks uses one stream of each reducer, the next collective the next stream:
// a stream's next chunk comes K collectives later), short beside a collective timeout. Only a
// member waiting for room to keep its results waits on it, and that member sends its own at
// once (CommunicatorCore::onResultsIn). With 5 ms, a third of the acknowledgements of 64 KiB
// all-reduces on loopback (4 workers, 4 reducers x 4 streams, 0.7-1 ms each) still went alone.
inline constexpr auto kAckDelay = std::chrono::milliseconds(20);

using AckTimer = transport::DelayedCalls<Connection>;

}  // namespace rs::client
