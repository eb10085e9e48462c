// In-process NCCL for the CPU harness: the ranks of a world are threads of one process.
//
// The communicator, collectives (all-reduce, reduce-scatter, all-gather, broadcast, reduce),
// grouped send/receive and ncclCommSplit follow NCCL's API and semantics; every call is queued
// on its stream like the real one and runs when the stream is drained. Reductions combine the
// ranks' buffers in rank order, rounding to the element type after every step - exactly what
// ccopt's reference interpreter does, so replicated results agree bit for bit.
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

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5
} ncclResult_t;
typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
} ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef struct {
  int blocking;
  int minCTAs;
  int maxCTAs;  // the harness has no CTAs: recorded on the communicator, not enforced
} ncclConfig_t;
#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define NCCL_CONFIG_INITIALIZER {1, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT}

inline const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : "host NCCL error";
}

namespace ccopt_nccl {

// What the ranks of one communicator share.
struct Shared {
  explicit Shared(int n) : size(n), send(n), recv(n), requests(n) {}
  int size;
  std::mutex mu;
  std::condition_variable cv;
  long generation = 0;
  int arrived = 0;
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<std::pair<int, int>> requests;  // (color, key) of ncclCommSplit
  std::map<int, std::shared_ptr<Shared>> splits;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail;  // (from, to) -> messages

  // Every rank waits until all have arrived (reusable).
  void barrier() {
    std::unique_lock<std::mutex> lock(mu);
    long seen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != seen; });
    }
  }
};

inline std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<std::string, std::shared_ptr<Shared>>& registry() {
  static std::map<std::string, std::shared_ptr<Shared>> r;
  return r;
}

inline size_t size_of(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
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
  std::shared_ptr<ccopt_nccl::Shared> shared;
  int rank;
  int size;
};
typedef ncclComm* ncclComm_t;

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<long> counter{0};
  std::memset(id->internal, 0, sizeof(id->internal));
  std::snprintf(id->internal, sizeof(id->internal), "ccopt-host-%ld-%p", ++counter, (void*)id);
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  std::shared_ptr<ccopt_nccl::Shared> shared;
  {
    std::lock_guard<std::mutex> lock(ccopt_nccl::registry_mutex());
    auto& entry = ccopt_nccl::registry()[std::string(id.internal)];
    if (!entry) entry = std::make_shared<ccopt_nccl::Shared>(nranks);
    shared = entry;
  }
  if (shared->size != nranks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  *comm = new ncclComm{shared, rank, nranks};
  shared->barrier();
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->maxCTAs < 1) return ncclInvalidArgument;
  return ncclCommInitRank(comm, nranks, id, rank);
}

inline ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  auto& s = *comm->shared;
  s.requests[comm->rank] = {color, key};
  s.barrier();
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of my color
  for (int r = 0; r < s.size; ++r)
    if (s.requests[r].first == color) members.push_back({s.requests[r].second, r});
  std::sort(members.begin(), members.end());
  int my_rank = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].second == comm->rank) my_rank = (int)i;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.splits.count(color)) s.splits[color] = std::make_shared<ccopt_nccl::Shared>((int)members.size());
  }
  s.barrier();
  std::shared_ptr<ccopt_nccl::Shared> child;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    child = s.splits[color];
  }
  s.barrier();
  if (comm->rank == 0) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.splits.clear();
  }
  s.barrier();
  *newcomm = new ncclComm{child, my_rank, (int)members.size()};
  return ncclSuccess;
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

namespace ccopt_nccl {

// Publish this rank's buffers, wait for everyone, compute, wait again before buffers are reused.
template <class F>
inline void collective(ncclComm_t comm, const void* send, void* recv, F&& compute) {
  Shared& s = *comm->shared;
  s.send[comm->rank] = send;
  s.recv[comm->rank] = recv;
  s.barrier();
  compute(s);
  s.barrier();
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
  ncclComm_t comm;
  cudaStream_t stream;
};
inline thread_local int group_depth = 0;
inline thread_local std::vector<Pending> pending;

inline void exchange(std::vector<Pending> ops) {
  for (const Pending& p : ops) {
    if (!p.send) continue;
    Shared& s = *p.comm->shared;
    std::vector<char> message(p.count * size_of(p.type));
    std::memcpy(message.data(), p.buffer, message.size());
    std::lock_guard<std::mutex> lock(s.mu);
    s.mail[{p.comm->rank, p.peer}].push_back(std::move(message));
    s.cv.notify_all();
  }
  for (const Pending& p : ops) {
    if (p.send) continue;
    Shared& s = *p.comm->shared;
    std::unique_lock<std::mutex> lock(s.mu);
    auto& box = s.mail[{p.peer, p.comm->rank}];
    s.cv.wait(lock, [&] { return !box.empty(); });
    std::memcpy(p.buffer, box.front().data(), box.front().size());
    box.pop_front();
  }
}

}  // namespace ccopt_nccl

inline ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  ccopt_host::enqueue(stream, [=] {
    ccopt_nccl::collective(comm, send, recv, [&](ccopt_nccl::Shared& s) {
      auto acc = ccopt_nccl::reduce_all(s, 0, count, t, op);
      s.barrier();  // everyone has read every send buffer before anyone writes (in place)
      std::memcpy(recv, acc.data(), acc.size());
    });
  });
  return ncclSuccess;
}

inline ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  ccopt_host::enqueue(stream, [=] {
    ccopt_nccl::collective(comm, send, recv, [&](ccopt_nccl::Shared& s) {
      auto acc = ccopt_nccl::reduce_all(s, (size_t)comm->rank * recvcount, recvcount, t, op);
      s.barrier();
      std::memcpy(recv, acc.data(), acc.size());
    });
  });
  return ncclSuccess;
}

inline ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t t, ncclComm_t comm, cudaStream_t stream) {
  ccopt_host::enqueue(stream, [=] {
    ccopt_nccl::collective(comm, send, recv, [&](ccopt_nccl::Shared& s) {
      size_t bytes = sendcount * ccopt_nccl::size_of(t);
      std::vector<char> all(bytes * s.size);
      for (int r = 0; r < s.size; ++r) std::memcpy(all.data() + r * bytes, s.send[r], bytes);
      s.barrier();
      std::memcpy(recv, all.data(), all.size());
    });
  });
  return ncclSuccess;
}

inline ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t stream) {
  ccopt_host::enqueue(stream, [=] {
    ccopt_nccl::collective(comm, send, recv, [&](ccopt_nccl::Shared& s) {
      size_t bytes = count * ccopt_nccl::size_of(t);
      std::vector<char> value(static_cast<const char*>(s.send[root]), static_cast<const char*>(s.send[root]) + bytes);
      s.barrier();
      std::memcpy(recv, value.data(), bytes);
    });
  });
  return ncclSuccess;
}

inline ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  ccopt_host::enqueue(stream, [=] {
    ccopt_nccl::collective(comm, send, recv, [&](ccopt_nccl::Shared& s) {
      auto acc = ccopt_nccl::reduce_all(s, 0, count, t, op);
      s.barrier();
      if (comm->rank == root) std::memcpy(recv, acc.data(), acc.size());
    });
  });
  return ncclSuccess;
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
  ccopt_host::enqueue(ops.front().stream, [ops] { ccopt_nccl::exchange(ops); });
  return ncclSuccess;
}

inline ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  ncclGroupStart();
  ccopt_nccl::pending.push_back({true, const_cast<void*>(send), count, t, peer, comm, stream});
  return ncclGroupEnd();
}

inline ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  ncclGroupStart();
  ccopt_nccl::pending.push_back({false, recv, count, t, peer, comm, stream});
  return ncclGroupEnd();
}
