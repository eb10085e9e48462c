// In-process NCCL for the CPU harness: the ranks of a world are threads of one process.
//
// Communicators (blocking or non-blocking, as ncclConfig_t says), ncclCommSplit, the
// collectives (all-reduce, reduce-scatter, all-gather, broadcast, reduce), grouped send/receive,
// ncclCommGetAsyncError, ncclCommFinalize and ncclCommAbort follow NCCL's API and semantics.
// Every call is queued on its stream like the real one and runs when the stream makes progress;
// a collective waits there (never blocking the thread) until every member has arrived, so a
// rank that never arrives leaves the others waiting exactly as on GPUs, and only the host's
// timeout and ncclCommAbort get them out. Reductions combine the ranks' buffers in rank order,
// rounding to the element type after every step - exactly what ccopt's reference interpreter
// does, so replicated results agree bit for bit.
//
// Faults are injected with CCOPT_HOST_FAULT="RANK:CALL:KIND": the CALL-th (0-based) NCCL call
// that communicates (init, split, collectives, send, receive) of world rank RANK
//   error - returns ncclSystemError at once;
//   async - is issued, then fails on its stream (ncclCommGetAsyncError reports ncclSystemError);
//   die   - throws ccopt_nccl::RankDied: the rank's thread stops like a dead process.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "nccl_api.h"

namespace ccopt_nccl {

// What the ranks of one communicator share. Every step that needs all members is a barrier:
// member r arrives by counting `arrived[r]` up; barrier b is passed once every count is >= b.
struct Shared {
  explicit Shared(int n) : size(n), arrived(n, 0), send(n), recv(n) {}
  int size;
  std::mutex mu;
  std::vector<long> arrived;
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::map<long, std::vector<std::pair<int, int>>> split_requests;  // barrier -> (color, key) per rank
  std::map<std::pair<long, int>, std::shared_ptr<Shared>> splits;    // (barrier, color) -> child
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail;  // (from, to) -> messages
  std::atomic<bool> aborted{false};  // a member called ncclCommAbort

  long arrive(int rank) {
    std::lock_guard<std::mutex> lock(mu);
    return ++arrived[rank];
  }
  bool passed(long barrier) {
    std::lock_guard<std::mutex> lock(mu);
    return *std::min_element(arrived.begin(), arrived.end()) >= barrier;
  }
};

// One rank's membership; queued work holds it, so ncclCommAbort/Destroy may free the handle.
struct Member {
  std::shared_ptr<Shared> shared;
  int rank = 0;
  int size = 0;
  std::atomic<int> state{ncclSuccess};  // what ncclCommGetAsyncError reports
  std::atomic<bool> aborted{false};
  std::function<bool()> pending;  // completes an in-progress init or split; true once done

  bool broken() const { return aborted.load() || (shared && shared->aborted.load()); }
  // whether queued work may go on; a communicator a member aborted reports ncclRemoteError
  bool healthy() {
    if (broken()) fail(ncclRemoteError);
    return state.load() == ncclSuccess;
  }
  // a member whose collective can no longer complete records why (first cause wins)
  void fail(ncclResult_t r) {
    int expected = ncclSuccess;
    state.compare_exchange_strong(expected, r);
  }
};

// --- fault injection ---------------------------------------------------------------------------
struct RankDied {};
inline thread_local int world_rank = -1;
inline thread_local long calls = 0;
enum class Fault { none, error, async };

inline Fault inject() {
  long call = calls++;
  const char* plan = std::getenv("CCOPT_HOST_FAULT");
  if (!plan) return Fault::none;
  int rank = -1;
  long at = -1;
  char kind[16] = {0};
  if (std::sscanf(plan, "%d:%ld:%15s", &rank, &at, kind) != 3 || rank != world_rank || at != call)
    return Fault::none;
  if (std::string(kind) == "die") throw RankDied{};
  return std::string(kind) == "async" ? Fault::async : Fault::error;
}

// numpy's maximum/minimum propagate NaN
template <class T>
inline T combine(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return (T)(a + b);
    case ncclProd: return (T)(a * b);
    case ncclMax: return (a != a) ? a : (b != b) ? b : (a > b ? a : b);
    default: return (a != a) ? a : (b != b) ? b : (a < b ? a : b);
  }
}

template <class T>
inline T wrapping(T a, T b, ncclRedOp_t op) {  // integer sum and product wrap around
  using U = typename std::make_unsigned<T>::type;
  if (op == ncclSum) return (T)((U)a + (U)b);
  if (op == ncclProd) return (T)((U)a * (U)b);
  return combine(a, b, op);
}

// acc[i] = op(acc[i], x[i]) in the element type (half types compute in float, then round).
inline void accumulate(void* acc, const void* x, size_t n, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
    case ncclFloat16: {
      auto* a = static_cast<__half*>(acc);
      auto* b = static_cast<const __half*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = __half(combine((float)a[i], (float)b[i], op));
      break;
    }
    case ncclBfloat16: {
      auto* a = static_cast<__nv_bfloat16*>(acc);
      auto* b = static_cast<const __nv_bfloat16*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = __nv_bfloat16(combine((float)a[i], (float)b[i], op));
      break;
    }
    case ncclFloat32: {
      auto* a = static_cast<float*>(acc);
      auto* b = static_cast<const float*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = combine(a[i], b[i], op);
      break;
    }
    case ncclFloat64: {
      auto* a = static_cast<double*>(acc);
      auto* b = static_cast<const double*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = combine(a[i], b[i], op);
      break;
    }
    case ncclInt32: {
      auto* a = static_cast<int32_t*>(acc);
      auto* b = static_cast<const int32_t*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = wrapping(a[i], b[i], op);
      break;
    }
    case ncclInt64: {
      auto* a = static_cast<int64_t*>(acc);
      auto* b = static_cast<const int64_t*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = wrapping(a[i], b[i], op);
      break;
    }
    default: {
      auto* a = static_cast<uint8_t*>(acc);
      auto* b = static_cast<const uint8_t*>(x);
      for (size_t i = 0; i < n; ++i) a[i] = combine(a[i], b[i], op);
      break;
    }
  }
}

}  // namespace ccopt_nccl

struct ncclComm {
  std::shared_ptr<ccopt_nccl::Member> member;
  bool blocking = true;
  ncclComm(std::shared_ptr<ccopt_nccl::Member> m, bool b) : member(std::move(m)), blocking(b) {
    ++ccopt_host::live.communicators;
  }
  ~ncclComm() { --ccopt_host::live.communicators; }
};
typedef ncclComm* ncclComm_t;

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<long> counter{0};
  std::memset(id->internal, 0, sizeof(id->internal));
  std::snprintf(id->internal, sizeof(id->internal), "ccopt-host-%ld-%p", ++counter, (void*)id);
  return ncclSuccess;
}

inline ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  auto& m = *comm->member;
  if (m.state.load() == ncclInProgress && m.pending && m.pending()) {
    m.pending = nullptr;
    int expected = ncclInProgress;
    m.state.compare_exchange_strong(expected, ncclSuccess);
  }
  *state = (ncclResult_t)m.state.load();
  return ncclSuccess;
}

namespace ccopt_nccl {
// A blocking communicator's init or split returns once done (or once aborted).
inline ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  for (;;) {
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclInProgress || comm->member->broken()) break;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return state == ncclInProgress ? ncclRemoteError : state;
}
inline ncclResult_t started(ncclComm_t comm) {
  return comm->blocking ? settle(comm) : ncclInProgress;
}
}  // namespace ccopt_nccl

inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  ccopt_nccl::world_rank = rank;
  if (ccopt_nccl::inject() != ccopt_nccl::Fault::none) return ncclSystemError;
  auto shared = ccopt_nccl::shared_state<ccopt_nccl::Shared>(id, nranks);
  if (shared->size != nranks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  // the harness has no CTAs: a cap is checked as NCCL checks it, not enforced
  if (config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->maxCTAs < 1) return ncclInvalidArgument;
  auto member = std::make_shared<ccopt_nccl::Member>();
  member->shared = shared;
  member->rank = rank;
  member->size = nranks;
  member->state = ncclInProgress;
  long barrier = shared->arrive(rank);
  member->pending = [shared, barrier] { return shared->passed(barrier); };
  *comm = new ncclComm{member, !config || config->blocking != 0};
  return ccopt_nccl::started(*comm);
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

inline ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (ccopt_nccl::inject() != ccopt_nccl::Fault::none) return ncclSystemError;
  auto parent = comm->member;
  if (parent->state.load() != ncclSuccess) return ncclInvalidUsage;
  auto shared = parent->shared;
  long barrier;
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    barrier = shared->arrived[parent->rank] + 1;
    auto& requests = shared->split_requests[barrier];
    requests.resize(shared->size);
    requests[parent->rank] = {color, key};
    shared->arrived[parent->rank] = barrier;
  }
  auto member = std::make_shared<ccopt_nccl::Member>();
  member->state = ncclInProgress;
  ccopt_nccl::Member* child = member.get();
  const int me = parent->rank;
  auto join = [shared, barrier, color, me, child] {
    if (!shared->passed(barrier)) return false;
    std::lock_guard<std::mutex> lock(shared->mu);
    std::vector<std::pair<int, int>> members;  // (key, parent rank) of my color
    const auto& requests = shared->split_requests[barrier];
    for (int r = 0; r < shared->size; ++r)
      if (requests[r].first == color) members.push_back({requests[r].second, r});
    std::sort(members.begin(), members.end());
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].second == me) child->rank = (int)i;
    auto& group = shared->splits[{barrier, color}];
    if (!group) group = std::make_shared<ccopt_nccl::Shared>((int)members.size());
    child->shared = group;
    child->size = (int)members.size();
    return true;
  };
  const bool blocking = config ? config->blocking != 0 : comm->blocking;
  if (blocking) {
    member->pending = join;
    *newcomm = new ncclComm{member, blocking};
    return ccopt_nccl::settle(*newcomm);
  }
  // Non-blocking, as NCCL 2.28 does it: ncclSuccess at once, the parent in progress until every
  // member has arrived, and the new communicator filled in only then.
  *newcomm = nullptr;
  parent->state = ncclInProgress;
  parent->pending = [join, member, newcomm] {
    if (!join()) return false;
    member->state = ncclSuccess;
    *newcomm = new ncclComm{member, false};
    return true;
  };
  return ncclSuccess;
}

// Flushes nothing: the harness's queued work holds its membership, so the comm may go.
inline ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return comm->member->state.load() == ncclSuccess ? ncclSuccess : ncclInvalidUsage;
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

// Every member's queued work stops waiting (it completes without computing), here and on the
// other ranks of the communicator - they see ncclRemoteError.
inline ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  comm->member->aborted = true;
  if (comm->member->shared) comm->member->shared->aborted = true;
  delete comm;
  return ncclSuccess;
}

namespace ccopt_nccl {

inline ncclResult_t usable(ncclComm_t comm) {
  int state = comm->member->state.load();
  if (state == ncclInProgress) return ncclInvalidUsage;
  return (ncclResult_t)state;
}

// One collective: every member publishes its buffers and arrives; once all have, each computes
// its result from everyone's send buffers and arrives again; once all have (nobody reads a send
// buffer any more), each writes its receive buffer. Each step is queued work that waits on the
// stream, never on the thread.
template <class Compute>
inline ncclResult_t collective(ncclComm_t comm, const void* send, void* recv, cudaStream_t stream, Compute compute) {
  Fault fault = inject();
  if (fault == Fault::error) return ncclSystemError;
  if (ncclResult_t r = usable(comm)) return r;
  struct Step {
    long published = 0, read = 0;
    bool failed = false;
    std::vector<char> result;
  };
  auto m = comm->member;
  auto step = std::make_shared<Step>();
  ccopt_host::enqueue(stream, [=] {
    if (fault == Fault::async) m->fail(ncclSystemError);
    if (!m->healthy()) {
      step->failed = true;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m->shared->mu);
      m->shared->send[m->rank] = send;
      m->shared->recv[m->rank] = recv;
    }
    step->published = m->shared->arrive(m->rank);
  });
  auto phase = [m, step](long Step::*barrier, auto body) {
    return std::make_pair(
        std::function<bool()>([m, step, barrier] { return step->failed || m->broken() || m->shared->passed(step.get()->*barrier); }),
        std::function<void()>([m, step, body] {
          if (step->failed || !m->healthy()) {
            step->failed = true;
            return;
          }
          body();
        }));
  };
  auto [ready1, run1] = phase(&Step::published, [m, step, compute] {
    step->result = compute(*m->shared, m->rank);
    step->read = m->shared->arrive(m->rank);
  });
  ccopt_host::enqueue_when(stream, ready1, run1);
  auto [ready2, run2] = phase(&Step::read, [step, recv] {
    if (!step->result.empty()) std::memcpy(recv, step->result.data(), step->result.size());
  });
  ccopt_host::enqueue_when(stream, ready2, run2);
  return ncclSuccess;
}

inline std::vector<char> reduce_all(Shared& s, size_t offset, size_t count, ncclDataType_t t, ncclRedOp_t op) {
  size_t bytes = count * size_of(t);
  std::vector<char> acc(bytes);
  std::memcpy(acc.data(), static_cast<const char*>(s.send[0]) + offset * size_of(t), bytes);
  for (int r = 1; r < s.size; ++r)
    accumulate(acc.data(), static_cast<const char*>(s.send[r]) + offset * size_of(t), count, t, op);
  return acc;
}

struct Pending {
  bool send;
  void* buffer;
  size_t count;
  ncclDataType_t type;
  int peer;
  std::shared_ptr<Member> member;
  cudaStream_t stream;
  Fault fault;
};
inline thread_local int group_depth = 0;
inline thread_local std::vector<Pending> pending;

// A group's sends are posted when its turn on the stream comes; each receive waits there for
// its message.
inline void exchange(const std::vector<Pending>& ops) {
  cudaStream_t stream = ops.front().stream;
  for (const Pending& p : ops)
    if (p.send) {
      auto m = p.member;
      std::vector<char> message(p.count * size_of(p.type));
      const void* from = p.buffer;
      int peer = p.peer;
      Fault fault = p.fault;
      ccopt_host::enqueue(stream, [m, message, from, peer, fault]() mutable {
        if (fault == Fault::async) m->fail(ncclSystemError);
        if (!m->healthy()) return;
        std::memcpy(message.data(), from, message.size());
        std::lock_guard<std::mutex> lock(m->shared->mu);
        m->shared->mail[{m->rank, peer}].push_back(std::move(message));
      });
    }
  for (const Pending& p : ops)
    if (!p.send) {
      auto m = p.member;
      void* into = p.buffer;
      int peer = p.peer;
      Fault fault = p.fault;
      ccopt_host::enqueue_when(
          stream,
          [m, peer] {
            if (m->broken() || m->state.load() != ncclSuccess) return true;
            std::lock_guard<std::mutex> lock(m->shared->mu);
            return !m->shared->mail[{peer, m->rank}].empty();
          },
          [m, peer, into, fault] {
            if (fault == Fault::async) m->fail(ncclSystemError);
            if (!m->healthy()) return;
            std::lock_guard<std::mutex> lock(m->shared->mu);
            auto& box = m->shared->mail[{peer, m->rank}];
            std::memcpy(into, box.front().data(), box.front().size());
            box.pop_front();
          });
    }
}

}  // namespace ccopt_nccl

inline ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::collective(comm, send, recv, stream, [=](ccopt_nccl::Shared& s, int) {
    return ccopt_nccl::reduce_all(s, 0, count, t, op);
  });
}

inline ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::collective(comm, send, recv, stream, [=](ccopt_nccl::Shared& s, int rank) {
    return ccopt_nccl::reduce_all(s, (size_t)rank * recvcount, recvcount, t, op);
  });
}

inline ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::collective(comm, send, recv, stream, [=](ccopt_nccl::Shared& s, int) {
    size_t bytes = sendcount * ccopt_nccl::size_of(t);
    std::vector<char> all(bytes * s.size);
    for (int r = 0; r < s.size; ++r) std::memcpy(all.data() + r * bytes, s.send[r], bytes);
    return all;
  });
}

inline ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::collective(comm, send, recv, stream, [=](ccopt_nccl::Shared& s, int) {
    const char* from = static_cast<const char*>(s.send[root]);
    return std::vector<char>(from, from + count * ccopt_nccl::size_of(t));
  });
}

inline ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::collective(comm, send, recv, stream, [=](ccopt_nccl::Shared& s, int rank) {
    auto acc = ccopt_nccl::reduce_all(s, 0, count, t, op);
    return rank == root ? acc : std::vector<char>();
  });
}

inline ncclResult_t ncclGroupStart() {
  ++ccopt_nccl::group_depth;
  return ncclSuccess;
}

inline ncclResult_t ncclGroupEnd() {
  if (--ccopt_nccl::group_depth > 0) return ncclSuccess;
  std::vector<ccopt_nccl::Pending> ops = std::move(ccopt_nccl::pending);
  ccopt_nccl::pending.clear();
  if (ops.empty()) return ncclSuccess;
  ccopt_nccl::exchange(ops);
  return ncclSuccess;
}

namespace ccopt_nccl {
inline ncclResult_t point_to_point(bool send, void* buffer, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  Fault fault = inject();
  if (fault == Fault::error) return ncclSystemError;
  if (ncclResult_t r = usable(comm)) return r;
  ncclGroupStart();
  pending.push_back({send, buffer, count, t, peer, comm->member, stream, fault});
  return ncclGroupEnd();
}
}  // namespace ccopt_nccl

inline ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::point_to_point(true, const_cast<void*>(send), count, t, peer, comm, stream);
}

inline ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  return ccopt_nccl::point_to_point(false, recv, count, t, peer, comm, stream);
}
