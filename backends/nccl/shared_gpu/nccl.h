// NCCL for ranks that share one GPU: the ranks of a world are threads of one process, all on the
// same device (real NCCL refuses two ranks on one GPU: "Duplicate GPU detected").
//
// The generated program is compiled by nvcc against this header instead of NCCL's, so its
// kernels, cuBLAS calls, streams and events run on the GPU as they do in a real job, and only
// the communication is done here: a collective is a host rendezvous of the members (each
// publishes its buffers and an event recorded on its stream), then device work on each member's
// own stream - it waits for every member's event, combines the members' send buffers into a
// scratch buffer (a reduction kernel, or device-to-device copies), and after a second rendezvous
// (once nobody reads a send buffer any more) copies the scratch into its receive buffer. Nothing
// blocks the host but the rendezvous, so the run's stream order is the program's own.
// Reductions combine the ranks' buffers in rank order, rounding to the element type after every
// step, as ccopt's reference interpreter and the CPU harness do.
//
// Covered: ncclGetUniqueId, ncclCommInitRank(Config), ncclCommSplit, the collectives (all-reduce,
// reduce-scatter, all-gather, broadcast, reduce), grouped send/receive, ncclCommGetAsyncError,
// ncclCommFinalize, ncclCommDestroy and ncclCommAbort. A member that never arrives at a
// rendezvous fails the others with ncclSystemError after CCOPT_SHARED_GPU_WAIT_S seconds
// (default 120), and an aborted communicator fails them with ncclRemoteError.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "nccl_api.h"  // (backends/nccl/host)

namespace ccopt_shared_gpu {

constexpr int kMaxRanks = 64;

// What one member hands the others at a rendezvous.
struct Post {
  const void* send = nullptr;
  cudaEvent_t event = nullptr;
  int color = 0;
  int key = 0;
};

inline double wait_seconds() {
  const char* text = std::getenv("CCOPT_SHARED_GPU_WAIT_S");
  return text ? std::atof(text) : 120.0;
}

// What the members of one communicator share: numbered rendezvous rounds, the children of
// splits, and the mailboxes of point-to-point messages.
struct Shared {
  explicit Shared(int n) : size(n) {}
  int size;
  std::mutex mu;
  std::condition_variable changed;
  std::map<long, std::vector<Post>> posts;
  std::map<long, int> arrived, left;
  std::map<std::pair<long, int>, std::shared_ptr<Shared>> splits;  // (round, color) -> child
  std::map<std::pair<int, int>, std::deque<Post>> mail, acks;      // (from, to) -> posts
  bool aborted = false;

  // Wait (the lock held) until `ready()`, the communicator is aborted or the time is up.
  template <class Ready>
  ncclResult_t await(std::unique_lock<std::mutex>& lock, Ready ready) {
    const auto limit = std::chrono::duration<double>(wait_seconds());
    if (!changed.wait_for(lock, limit, [&] { return aborted || ready(); })) {
      std::fprintf(stderr, "ccopt shared-GPU NCCL: a member did not arrive within %g s (CCOPT_SHARED_GPU_WAIT_S)\n",
                   limit.count());
      return ncclSystemError;
    }
    return aborted ? ncclRemoteError : ncclSuccess;
  }

  // Round `round` of member `rank`: publish `mine`, wait for every member's, return them all.
  ncclResult_t rendezvous(long round, int rank, const Post& mine, std::vector<Post>* all) {
    std::unique_lock<std::mutex> lock(mu);
    auto& slot = posts[round];
    slot.resize(size);
    slot[rank] = mine;
    if (++arrived[round] == size) changed.notify_all();
    if (ncclResult_t r = await(lock, [&] { return arrived[round] == size; })) return r;
    *all = slot;
    if (++left[round] == size) {
      posts.erase(round);
      arrived.erase(round);
      left.erase(round);
    }
    return ncclSuccess;
  }

  void post(std::map<std::pair<int, int>, std::deque<Post>>& box, int from, int to, const Post& p) {
    std::lock_guard<std::mutex> lock(mu);
    box[{from, to}].push_back(p);
    changed.notify_all();
  }

  ncclResult_t take(std::map<std::pair<int, int>, std::deque<Post>>& box, int from, int to, Post* p) {
    std::unique_lock<std::mutex> lock(mu);
    auto& queue = box[{from, to}];
    if (ncclResult_t r = await(lock, [&] { return !queue.empty(); })) return r;
    *p = queue.front();
    queue.pop_front();
    return ncclSuccess;
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = true;
    changed.notify_all();
  }
};

// The members' send buffers a kernel reads, passed by value.
struct Sources {
  const void* at[kMaxRanks];
};

// Integers wrap around (as the interpreter's numpy does); floats combine in their own type.
template <class A>
__device__ inline A combine(A a, A b, int op) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}

// out[i] = send_0[offset + i] (op) send_1[offset + i] (op) ... in rank order; A is the type the
// step is computed in, rounded back to T after every step.
template <class T, class A>
__global__ void fold(Sources sources, int members, size_t offset, size_t count, int op, T* out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
    T acc = static_cast<const T*>(sources.at[0])[offset + i];
    for (int r = 1; r < members; ++r)
      acc = static_cast<T>(combine<A>(static_cast<A>(acc), static_cast<A>(static_cast<const T*>(sources.at[r])[offset + i]), op));
    out[i] = acc;
  }
}

template <class T, class A>
inline void launch_fold(const Sources& s, int members, size_t offset, size_t count, int op, void* out, cudaStream_t stream) {
  if (count == 0) return;
  size_t blocks = (count + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  fold<T, A><<<(unsigned)blocks, 256, 0, stream>>>(s, members, offset, count, op, static_cast<T*>(out));
}

inline void reduce_into(const Sources& s, int members, size_t offset, size_t count, ncclDataType_t t, ncclRedOp_t op,
                        void* out, cudaStream_t stream) {
  switch (t) {
    case ncclInt8: return launch_fold<int8_t, int32_t>(s, members, offset, count, op, out, stream);
    case ncclUint8: return launch_fold<uint8_t, uint32_t>(s, members, offset, count, op, out, stream);
    case ncclInt32: return launch_fold<int32_t, int64_t>(s, members, offset, count, op, out, stream);
    case ncclUint32: return launch_fold<uint32_t, uint32_t>(s, members, offset, count, op, out, stream);
    case ncclInt64: return launch_fold<long long, long long>(s, members, offset, count, op, out, stream);
    case ncclUint64: return launch_fold<unsigned long long, unsigned long long>(s, members, offset, count, op, out, stream);
    case ncclFloat16: return launch_fold<__half, float>(s, members, offset, count, op, out, stream);
    case ncclBfloat16: return launch_fold<__nv_bfloat16, float>(s, members, offset, count, op, out, stream);
    case ncclFloat32: return launch_fold<float, float>(s, members, offset, count, op, out, stream);
    case ncclFloat64: return launch_fold<double, double>(s, members, offset, count, op, out, stream);
  }
}

}  // namespace ccopt_shared_gpu

struct ncclComm {
  std::shared_ptr<ccopt_shared_gpu::Shared> shared;
  int rank = 0;
  int size = 0;
  long round = 0;                    // this member's rendezvous so far
  std::vector<cudaEvent_t> retired;  // its events others may still be waiting on
};
typedef ncclComm* ncclComm_t;

namespace ccopt_shared_gpu {

inline ncclResult_t cuda(cudaError_t e) { return e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError; }

inline ncclResult_t recorded(cudaStream_t stream, cudaEvent_t* event) {
  if (cudaEventCreateWithFlags(event, cudaEventDisableTiming) != cudaSuccess) return ncclUnhandledCudaError;
  return cuda(cudaEventRecord(*event, stream));
}

// The next round of `comm`. Once it has passed, every member has finished the rounds before it,
// so events this member retired before it are waited on by nobody new and can go.
inline ncclResult_t next_round(ncclComm_t comm, const Post& mine, std::vector<Post>* all) {
  std::vector<cudaEvent_t> done = std::move(comm->retired);
  comm->retired.clear();
  ncclResult_t r = comm->shared->rendezvous(++comm->round, comm->rank, mine, all);
  for (cudaEvent_t e : done) cudaEventDestroy(e);
  return r;
}

// Scratch buffers are stream-ordered allocations of the device's default pool: freed memory
// stays in the pool instead of going back to the driver at every synchronization.
inline void keep_freed_memory() {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) return;
  uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
}

inline ncclResult_t wait_all(cudaStream_t stream, const std::vector<Post>& all) {
  for (const Post& p : all)
    if (p.event && cudaStreamWaitEvent(stream, p.event, 0) != cudaSuccess) return ncclUnhandledCudaError;
  return ncclSuccess;
}

// One collective of `bytes` result bytes; `compute(sources, scratch)` queues on `stream` what
// makes this member's result from every member's send buffer.
template <class Compute>
inline ncclResult_t collective(ncclComm_t comm, const void* send, void* recv, size_t bytes, cudaStream_t stream,
                               Compute compute) {
  if (!comm || !comm->shared) return ncclInvalidUsage;
  Post mine;
  mine.send = send;
  if (ncclResult_t r = recorded(stream, &mine.event)) return r;
  std::vector<Post> all;
  ncclResult_t r = next_round(comm, mine, &all);
  if (r == ncclSuccess) r = wait_all(stream, all);
  void* scratch = nullptr;
  if (r == ncclSuccess && bytes) r = cuda(cudaMallocAsync(&scratch, bytes, stream));
  if (r == ncclSuccess && (scratch || !bytes)) {
    Sources sources{};
    for (size_t i = 0; i < all.size(); ++i) sources.at[i] = all[i].send;
    r = compute(sources, scratch);
    if (r == ncclSuccess) r = cuda(cudaGetLastError());
  }
  Post read;  // every member's send buffer read by this member
  if (r == ncclSuccess) r = recorded(stream, &read.event);
  comm->retired.push_back(mine.event);
  if (r != ncclSuccess) return r;
  std::vector<Post> reads;
  r = next_round(comm, read, &reads);
  comm->retired.push_back(read.event);
  if (r == ncclSuccess) r = wait_all(stream, reads);
  if (r == ncclSuccess && scratch) r = cuda(cudaMemcpyAsync(recv, scratch, bytes, cudaMemcpyDeviceToDevice, stream));
  if (scratch) cudaFreeAsync(scratch, stream);
  return r;
}

struct Pending {
  bool send;
  void* buffer;
  size_t bytes;
  int peer;
  ncclComm_t comm;
  cudaStream_t stream;
};
inline thread_local int group_depth = 0;
inline thread_local std::vector<Pending> pending;

// A group's sends are posted first (a buffer and an event after its writers), then each receive
// takes its message and copies it on its own stream, and each send waits for the receiver's copy.
inline ncclResult_t exchange(const std::vector<Pending>& ops) {
  for (const Pending& p : ops)
    if (p.send) {
      Post message;
      message.send = p.buffer;
      if (ncclResult_t r = recorded(p.stream, &message.event)) return r;
      p.comm->shared->post(p.comm->shared->mail, p.comm->rank, p.peer, message);
    }
  for (const Pending& p : ops)
    if (!p.send) {
      Post message, copied;
      if (ncclResult_t r = p.comm->shared->take(p.comm->shared->mail, p.peer, p.comm->rank, &message)) return r;
      ncclResult_t r = cuda(cudaStreamWaitEvent(p.stream, message.event, 0));
      cudaEventDestroy(message.event);
      if (r == ncclSuccess && p.bytes)
        r = cuda(cudaMemcpyAsync(p.buffer, message.send, p.bytes, cudaMemcpyDeviceToDevice, p.stream));
      if (r == ncclSuccess) r = recorded(p.stream, &copied.event);
      if (r != ncclSuccess) return r;
      p.comm->shared->post(p.comm->shared->acks, p.comm->rank, p.peer, copied);
    }
  for (const Pending& p : ops)
    if (p.send) {
      Post copied;
      if (ncclResult_t r = p.comm->shared->take(p.comm->shared->acks, p.peer, p.comm->rank, &copied)) return r;
      ncclResult_t r = cuda(cudaStreamWaitEvent(p.stream, copied.event, 0));
      cudaEventDestroy(copied.event);
      if (r != ncclSuccess) return r;
    }
  return ncclSuccess;
}

}  // namespace ccopt_shared_gpu

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::mutex mu;
  static long counter = 0;
  std::lock_guard<std::mutex> lock(mu);
  std::memset(id->internal, 0, sizeof(id->internal));
  std::snprintf(id->internal, sizeof(id->internal), "ccopt-shared-gpu-%ld", ++counter);
  return ncclSuccess;
}

// Blocking whatever the config says (init and split return once every member has arrived), which
// a caller of a non-blocking communicator sees as an init that completed at once.
inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  using namespace ccopt_shared_gpu;
  *comm = nullptr;
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->maxCTAs < 1) return ncclInvalidArgument;
  auto shared = ccopt_nccl::shared_state<Shared>(id, nranks);
  if (shared->size != nranks) return ncclInvalidArgument;
  keep_freed_memory();
  auto* c = new ncclComm{shared, rank, nranks};
  std::vector<Post> all;
  if (ncclResult_t r = next_round(c, Post{}, &all)) {
    delete c;
    return r;
  }
  *comm = c;
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

inline ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  using namespace ccopt_shared_gpu;
  *newcomm = nullptr;
  if (!comm || !comm->shared) return ncclInvalidUsage;
  Post mine;
  mine.color = color;
  mine.key = key;
  std::vector<Post> all;
  if (ncclResult_t r = next_round(comm, mine, &all)) return r;
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of my color
  for (int r = 0; r < (int)all.size(); ++r)
    if (all[r].color == color) members.push_back({all[r].key, r});
  std::sort(members.begin(), members.end());
  int me = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].second == comm->rank) me = (int)i;
  std::shared_ptr<Shared> child;
  {
    std::lock_guard<std::mutex> lock(comm->shared->mu);
    auto& entry = comm->shared->splits[{comm->round, color}];
    if (!entry) entry = std::make_shared<Shared>((int)members.size());
    child = entry;
  }
  *newcomm = new ncclComm{child, me, (int)members.size()};
  return ncclSuccess;
}

inline ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  *state = ncclSuccess;
  if (comm && comm->shared) {
    std::lock_guard<std::mutex> lock(comm->shared->mu);
    if (comm->shared->aborted) *state = ncclRemoteError;
  }
  return ncclSuccess;
}

// A last rendezvous: once every member has arrived, nobody waits on this member's events.
inline ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm || !comm->shared) return ncclInvalidUsage;
  std::vector<ccopt_shared_gpu::Post> all;
  ncclResult_t r = ccopt_shared_gpu::next_round(comm, ccopt_shared_gpu::Post{}, &all);
  for (cudaEvent_t e : comm->retired) cudaEventDestroy(e);
  comm->retired.clear();
  return r;
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm)
    for (cudaEvent_t e : comm->retired) cudaEventDestroy(e);
  delete comm;
  return ncclSuccess;
}

// The other members' waits end with ncclRemoteError.
inline ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->shared) comm->shared->abort();
  return ncclCommDestroy(comm);
}

inline ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                  ncclComm_t comm, cudaStream_t stream) {
  const int n = comm ? comm->size : 0;
  return ccopt_shared_gpu::collective(comm, send, recv, count * ccopt_nccl::size_of(t), stream,
                                      [=](const ccopt_shared_gpu::Sources& s, void* out) {
                                        ccopt_shared_gpu::reduce_into(s, n, 0, count, t, op, out, stream);
                                        return ncclSuccess;
                                      });
}

inline ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t t, ncclRedOp_t op,
                                      ncclComm_t comm, cudaStream_t stream) {
  const int n = comm ? comm->size : 0, rank = comm ? comm->rank : 0;
  return ccopt_shared_gpu::collective(comm, send, recv, recvcount * ccopt_nccl::size_of(t), stream,
                                      [=](const ccopt_shared_gpu::Sources& s, void* out) {
                                        ccopt_shared_gpu::reduce_into(s, n, (size_t)rank * recvcount, recvcount, t, op, out, stream);
                                        return ncclSuccess;
                                      });
}

inline ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t t, ncclComm_t comm,
                                  cudaStream_t stream) {
  const int n = comm ? comm->size : 0;
  const size_t bytes = sendcount * ccopt_nccl::size_of(t);
  return ccopt_shared_gpu::collective(comm, send, recv, bytes * n, stream, [=](const ccopt_shared_gpu::Sources& s, void* out) {
    for (int r = 0; r < n; ++r)
      if (bytes && cudaMemcpyAsync(static_cast<char*>(out) + r * bytes, s.at[r], bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
        return ncclUnhandledCudaError;
    return ncclSuccess;
  });
}

inline ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                                  cudaStream_t stream) {
  if (comm && (root < 0 || root >= comm->size)) return ncclInvalidArgument;
  const size_t bytes = count * ccopt_nccl::size_of(t);
  return ccopt_shared_gpu::collective(comm, send, recv, bytes, stream, [=](const ccopt_shared_gpu::Sources& s, void* out) {
    return ccopt_shared_gpu::cuda(cudaMemcpyAsync(out, s.at[root], bytes, cudaMemcpyDeviceToDevice, stream));
  });
}

inline ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                               ncclComm_t comm, cudaStream_t stream) {
  if (comm && (root < 0 || root >= comm->size)) return ncclInvalidArgument;
  const int n = comm ? comm->size : 0;
  const bool mine = comm && comm->rank == root;
  return ccopt_shared_gpu::collective(comm, send, recv, mine ? count * ccopt_nccl::size_of(t) : 0, stream,
                                      [=](const ccopt_shared_gpu::Sources& s, void* out) {
                                        if (mine) ccopt_shared_gpu::reduce_into(s, n, 0, count, t, op, out, stream);
                                        return ncclSuccess;
                                      });
}

inline ncclResult_t ncclGroupStart() {
  ++ccopt_shared_gpu::group_depth;
  return ncclSuccess;
}

inline ncclResult_t ncclGroupEnd() {
  if (ccopt_shared_gpu::group_depth <= 0) return ncclInvalidUsage;
  if (--ccopt_shared_gpu::group_depth > 0) return ncclSuccess;
  std::vector<ccopt_shared_gpu::Pending> ops = std::move(ccopt_shared_gpu::pending);
  ccopt_shared_gpu::pending.clear();
  return ops.empty() ? ncclSuccess : ccopt_shared_gpu::exchange(ops);
}

inline ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  if (!comm || peer < 0 || peer >= comm->size) return ncclInvalidArgument;
  ncclGroupStart();
  ccopt_shared_gpu::pending.push_back({true, const_cast<void*>(send), count * ccopt_nccl::size_of(t), peer, comm, stream});
  return ncclGroupEnd();
}

inline ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  if (!comm || peer < 0 || peer >= comm->size) return ncclInvalidArgument;
  ncclGroupStart();
  ccopt_shared_gpu::pending.push_back({false, recv, count * ccopt_nccl::size_of(t), peer, comm, stream});
  return ncclGroupEnd();
}
