// Runs a generated program on every rank of its world as threads of this process, all on one GPU
// (the current device), with backends/nccl/shared_gpu/nccl.h standing in for NCCL:
// CCOPT_SHARED_GPU_DRIVER(ccopt_f) defines
//   extern "C" int ccopt_shared_gpu_run(void* const* host, const int64_t* bytes, int iterations,
//                                       double timeout_s, double* seconds, char* report,
//                                       long report_size);
// `host` and `bytes` hold world x num_args blocks (rank-major). Each rank creates the program,
// copies its blocks into fresh device memory on two streams of its own (the caller's and a
// producer's), runs the program once ordered after both by the run's events alone, and copies
// the blocks back after it: `host` then holds every rank's results. With `iterations` > 0 it
// then runs the program 2 more times to warm up and `iterations` times between two events on
// its caller's stream; seconds[r] is rank r's mean time per run (the ranks share the GPU, so
// this is the time of a step of the whole world on one GPU). Returns the number of ranks that
// failed; `report` gets one line per failed rank ("rank R: ...").
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "rank_failures.h"

namespace ccopt_shared_gpu {

// One rank's caller: device blocks, the caller's and a producer's stream.
struct Caller {
  std::vector<void*> blocks;
  cudaStream_t stream = nullptr, producer = nullptr;
  ~Caller() {
    for (void* b : blocks)
      if (b) cudaFree(b);
    if (stream) cudaStreamDestroy(stream);
    if (producer) cudaStreamDestroy(producer);
  }
};

inline std::string cuda_failed(int rank, const char* what, cudaError_t e) {
  return "rank " + std::to_string(rank) + ": " + what + " failed: " + cudaGetErrorString(e);
}

// The blocks of one rank in device memory, queued after nothing the program knows of.
inline std::string make_caller(int rank, Caller& c, void* const* host, const int64_t* bytes, int nargs) {
  cudaError_t e = cudaStreamCreate(&c.stream);
  if (e == cudaSuccess) e = cudaStreamCreate(&c.producer);
  c.blocks.assign(nargs, nullptr);
  for (int i = 0; i < nargs && e == cudaSuccess; ++i) {
    e = cudaMalloc(&c.blocks[i], (size_t)(bytes[i] ? bytes[i] : 1));
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(c.blocks[i], host[i], (size_t)bytes[i], cudaMemcpyHostToDevice, i % 2 ? c.producer : c.stream);
  }
  return e == cudaSuccess ? "" : cuda_failed(rank, "copying the inputs in", e);
}

// Rank r's mean seconds per run over `iterations` runs after 2 warm-up runs.
template <class Run, class Wait>
inline std::string time_runs(int rank, Caller& c, int iterations, Run run, Wait wait, double* seconds) {
  for (int i = 0; i < 2; ++i)
    if (run() != 0) return "";
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaError_t e = cudaEventCreate(&start);
  if (e == cudaSuccess) e = cudaEventCreate(&stop);
  if (e == cudaSuccess) e = cudaEventRecord(start, c.stream);
  for (int i = 0; i < iterations && e == cudaSuccess; ++i)
    if (run() != 0) break;
  if (e == cudaSuccess) e = cudaEventRecord(stop, c.stream);
  if (e == cudaSuccess && wait() == 0) e = cudaEventSynchronize(stop);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  *seconds = ms * 1e-3 / (iterations > 0 ? iterations : 1);
  return e == cudaSuccess ? "" : cuda_failed(rank, "timing the runs", e);
}

}  // namespace ccopt_shared_gpu

#define CCOPT_SHARED_GPU_DRIVER(prefix)                                                              \
  extern "C" int ccopt_shared_gpu_run(void* const* host, const int64_t* bytes, int iterations,        \
                                      double timeout_s, double* seconds, char* report, long report_size) { \
    const int world = prefix##_world(), nargs = prefix##_num_args();                                   \
    int device = 0;                                                                                    \
    cudaGetDevice(&device);                                                                            \
    ncclUniqueId id;                                                                                   \
    ncclGetUniqueId(&id);                                                                              \
    std::vector<std::string> errors(world);                                                            \
    std::vector<std::thread> ranks;                                                                    \
    for (int r = 0; r < world; ++r)                                                                    \
      ranks.emplace_back([&, r] {                                                                      \
        cudaSetDevice(device);                                                                         \
        void* ctx = nullptr;                                                                           \
        if (prefix##_create(r, world, &id, device, timeout_s, &ctx) != 0) {                            \
          errors[r] = prefix##_last_error();                                                           \
          return;                                                                                      \
        }                                                                                              \
        {                                                                                              \
          ccopt_shared_gpu::Caller caller;                                                             \
          void* const* mine = host + (long)r * nargs;                                                  \
          errors[r] = make_caller(r, caller, mine, bytes + (long)r * nargs, nargs);                    \
          void* streams[2] = {caller.stream, caller.producer};                                         \
          auto run = [&] { return prefix##_run(ctx, caller.blocks.data(), streams, 2, 0); };           \
          auto wait = [&] { return prefix##_wait(ctx); };                                              \
          if (errors[r].empty() && run() != 0) errors[r] = prefix##_last_error();                      \
          for (int i = 0; i < nargs && errors[r].empty(); ++i) {                                       \
            cudaError_t e = cudaMemcpyAsync(mine[i], caller.blocks[i], (size_t)bytes[(long)r * nargs + i], \
                                            cudaMemcpyDeviceToHost, caller.stream);                    \
            if (e != cudaSuccess) errors[r] = ccopt_shared_gpu::cuda_failed(r, "copying the results out", e); \
          }                                                                                            \
          if (errors[r].empty() && wait() != 0) errors[r] = prefix##_last_error();                     \
          cudaError_t e = cudaStreamSynchronize(caller.stream);                                        \
          if (errors[r].empty() && e != cudaSuccess)                                                   \
            errors[r] = ccopt_shared_gpu::cuda_failed(r, "the run", e);                                \
          if (errors[r].empty() && iterations > 0) {                                                   \
            errors[r] = ccopt_shared_gpu::time_runs(r, caller, iterations, run, wait, &seconds[r]);    \
            if (errors[r].empty() && !std::string(prefix##_last_error()).empty())                      \
              errors[r] = prefix##_last_error();                                                       \
          }                                                                                            \
        }                                                                                              \
        if (prefix##_destroy(ctx) != 0 && errors[r].empty()) errors[r] = prefix##_last_error();       \
      });                                                                                              \
    for (auto& t : ranks) t.join();                                                                    \
    return ccopt_driver::report_failures(errors, report, report_size);                        \
  }
