// Runs a generated program on every rank of its world as threads of this process (the CPU
// harness), the way a PyTorch caller does on GPUs: CCOPT_HOST_DRIVER(ccopt_f) defines
//   extern "C" int ccopt_host_run(void* const* host, const int64_t* bytes, int sync,
//                                 double timeout_s, char* report, long report_size);
// `host` and `bytes` hold world x num_args blocks (rank-major). Rank r sets device r % devices,
// creates the program there, and copies its blocks into fresh device memory on two streams of
// its own - the caller's stream and a producer's - *after* calling nothing: the copies, the run
// and the copies back are all queued, then the caller's stream is synchronized. Only the run's
// events order the program after the copies in and the copies out after the program, so a
// missing wait reads garbage (device memory starts as NaN bytes) under one of the two schedules.
// Returns the number of ranks that failed; `report` gets one line per failed rank
// ("rank R: ..." from the program, or "rank R: died" for a rank killed by CCOPT_HOST_FAULT).
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "rank_failures.h"

namespace ccopt_host {

// One rank's caller: device blocks, the caller's and a producer's stream.
struct Caller {
  std::vector<void*> blocks;
  cudaStream_t stream = nullptr, producer = nullptr;
};

inline void make_caller(Caller& c, void* const* host, const int64_t* bytes, int nargs) {
  cudaStreamCreate(&c.stream);
  cudaStreamCreate(&c.producer);
  c.blocks.assign(nargs, nullptr);
  for (int i = 0; i < nargs; ++i) {
    cudaMalloc(&c.blocks[i], (size_t)bytes[i]);
    cudaMemcpyAsync(c.blocks[i], host[i], (size_t)bytes[i], cudaMemcpyHostToDevice, i % 2 ? c.producer : c.stream);
  }
}

// " (leaked ...)" when this rank still holds streams, events, memory or communicators.
inline std::string leaks() {
  std::string out;
  auto add = [&out](long n, const char* what) {
    if (n) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(live.streams, "streams");
  add(live.events, "events");
  add(live.allocations, "allocations");
  add(live.communicators, "communicators");
  return out.empty() ? out : " (leaked " + out + ")";
}

inline void free_caller(Caller& c) {
  for (void* b : c.blocks) cudaFree(b);
  cudaStreamDestroy(c.stream);
  cudaStreamDestroy(c.producer);
}

}  // namespace ccopt_host

// For tests of the Python binding built on the harness (`build_on_host`): device memory, a
// caller's stream and work queued on it, from the calling thread (a rank).
extern "C" {
void* ccopt_host_malloc(size_t bytes, int device) {
  void* p = nullptr;
  int previous = 0;
  cudaGetDevice(&previous);
  if (cudaSetDevice(device) != cudaSuccess) return nullptr;
  cudaMalloc(&p, bytes);
  cudaSetDevice(previous);
  return p;
}
void ccopt_host_free(void* p) { cudaFree(p); }
void* ccopt_host_stream(void) {
  cudaStream_t s = nullptr;
  cudaStreamCreate(&s);
  return s;
}
void ccopt_host_copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream));
}
void ccopt_host_synchronize(void* stream) { cudaStreamSynchronize(static_cast<cudaStream_t>(stream)); }
}

#define CCOPT_HOST_DRIVER(prefix)                                                                \
  extern "C" int ccopt_host_run(void* const* host, const int64_t* bytes, int sync, double timeout_s, \
                                char* report, long report_size) {                                \
    const int world = prefix##_world(), nargs = prefix##_num_args();                             \
    ncclUniqueId id;                                                                             \
    ncclGetUniqueId(&id);                                                                        \
    std::vector<std::string> errors(world);                                                      \
    std::vector<std::thread> ranks;                                                              \
    for (int r = 0; r < world; ++r)                                                              \
      ranks.emplace_back([&, r] {                                                                \
        try {                                                                                    \
          int devices = 1;                                                                       \
          cudaGetDeviceCount(&devices);                                                          \
          const int device = r % devices;                                                        \
          void* ctx = nullptr;                                                                   \
          if (prefix##_create(r, world, &id, device, timeout_s, &ctx) != 0) {                    \
            errors[r] = prefix##_last_error() + ccopt_host::leaks();                             \
            return;                                                                              \
          }                                                                                      \
          cudaSetDevice(device);                                                                 \
          ccopt_host::Caller caller;                                                             \
          make_caller(caller, host + (long)r * nargs, bytes + (long)r * nargs, nargs);           \
          void* streams[2] = {caller.stream, caller.producer};                                   \
          int status = prefix##_run(ctx, caller.blocks.data(), streams, 2, sync);                \
          if (status == 0) {                                                                     \
            for (int i = 0; i < nargs; ++i)                                                      \
              cudaMemcpyAsync(host[(long)r * nargs + i], caller.blocks[i],                       \
                              (size_t)bytes[(long)r * nargs + i], cudaMemcpyDeviceToHost,        \
                              caller.stream);                                                    \
            if (!sync) status = prefix##_wait(ctx);                                              \
          }                                                                                      \
          if (status != 0) errors[r] = prefix##_last_error();                                    \
          cudaStreamSynchronize(caller.stream);                                                  \
          if (prefix##_destroy(ctx) != 0 && errors[r].empty()) errors[r] = prefix##_last_error(); \
          free_caller(caller);                                                                   \
          if (!ccopt_host::leaks().empty()) errors[r] += "rank " + std::to_string(r) + ":" + ccopt_host::leaks(); \
        } catch (const ccopt_nccl::RankDied&) {                                                  \
          errors[r] = "rank " + std::to_string(r) + ": died";                                    \
        }                                                                                        \
      });                                                                                        \
    for (auto& t : ranks) t.join();                                                              \
    return ccopt_driver::report_failures(errors, report, report_size);                        \
  }
