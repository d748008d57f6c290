// The public face of the client library: thin forwarding to CommunicatorCore.
#include <spdlog/spdlog.h>

#include "client/communicator_core.h"
#include "client/request_state.h"
#include "rs/client.h"

namespace rs::client {

AllReduceRequest::AllReduceRequest(std::shared_ptr<RequestState> state) : state_(std::move(state)) {}
AllReduceRequest::~AllReduceRequest() = default;

uint64_t AllReduceRequest::seq() const { return state_->seq(); }

bool AllReduceRequest::test(Status* status) {
  if (state_->done(status)) return true;
  if (auto comm = state_->comm().lock()) {
    comm->poll();
    if (std::chrono::steady_clock::now() >= state_->deadline()) {
      comm->failOnTimeout(*state_);
      comm->poll();
    }
  }
  return state_->done(status);
}

Status AllReduceRequest::wait() {
  Status status;
  auto comm = state_->comm().lock();
  if (!comm) {  // the communicator is gone, so the request was finished before that
    state_->waitUntil(std::chrono::steady_clock::time_point::max(), &status);
    return status;
  }
  if (!comm->waitFor(*state_, state_->deadline())) {
    comm->failOnTimeout(*state_);
    // Failing closes every stream; the request finishes once they drained, which is prompt.
    comm->waitFor(*state_, std::chrono::steady_clock::time_point::max());
  }
  state_->done(&status);
  return status;
}

Communicator::Communicator(std::shared_ptr<CommunicatorCore> core) : core_(std::move(core)) {}

Communicator::~Communicator() {
  if (core_) core_->shutdown();
}

Result<std::unique_ptr<Communicator>> Communicator::connect(const ClientOptions& options,
                                                            const GroupSpec& group) {
  RS_RETURN_IF_ERROR(options.validate());
  if (group.worldSize == 0 || group.rank >= group.worldSize)
    return invalidArgument("rank " + std::to_string(group.rank) + " is not below world size " +
                           std::to_string(group.worldSize));
  if (group.worldSize > 65536) return invalidArgument("world size above 65536");
  auto core = std::make_shared<CommunicatorCore>(options, group);
  if (Status s = core->start(); !s.isOk()) {
    core->shutdown();
    return s;
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(core)));
}

Result<std::shared_ptr<AllReduceRequest>> Communicator::allReduceAsync(
    const void* send, void* recv, size_t count, DataType type, ReduceOp op,
    std::chrono::milliseconds timeout) {
  auto state = core_->submit(send, recv, count, type, op, timeout);
  if (!state) return state.status();
  return std::make_shared<AllReduceRequest>(std::move(*state));
}

Status Communicator::allReduce(const void* send, void* recv, size_t count, DataType type,
                               ReduceOp op) {
  auto request = allReduceAsync(send, recv, count, type, op);
  if (!request) return request.status();
  return (*request)->wait();
}

void Communicator::abort(const Status& reason) { core_->fail(reason); }
Status Communicator::health() const { return core_->health(); }
RetentionStats Communicator::retention() const { return core_->retention(); }
FabricStats Communicator::fabric() const { return core_->fabric(); }

Result<BufferRegistration> Communicator::registerBuffer(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0)
    return invalidArgument(fmt::format("registerBuffer: {} bytes at {}", bytes, data));
  return core_->registerBuffer(data, bytes);
}

Status Communicator::deregisterBuffer(const BufferRegistration& registration) {
  return core_->deregisterBuffer(registration);
}
FailoverStats Communicator::failover() const { return core_->failover(); }
const GroupSpec& Communicator::group() const { return core_->group(); }
const ClientOptions& Communicator::options() const { return core_->options(); }

}  // namespace rs::client
