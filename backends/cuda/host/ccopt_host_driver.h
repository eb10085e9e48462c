// Runs a generated program on every rank of its world as threads of this process (the CPU
// harness): CCOPT_HOST_DRIVER(ccopt_f) defines
//   extern "C" int ccopt_host_run(void* const* buffers);  // world x num_args pointers, rank-major
#pragma once

#include <thread>
#include <vector>

#define CCOPT_HOST_DRIVER(prefix)                                                           \
  extern "C" int ccopt_host_run(void* const* buffers) {                                     \
    const int world = prefix##_world(), nargs = prefix##_num_args();                        \
    ncclUniqueId id;                                                                        \
    ncclGetUniqueId(&id);                                                                   \
    std::vector<int> status(world, 0);                                                      \
    std::vector<std::thread> ranks;                                                         \
    for (int r = 0; r < world; ++r)                                                         \
      ranks.emplace_back([&, r] {                                                           \
        void* ctx = nullptr;                                                                \
        status[r] = prefix##_create(r, world, &id, &ctx);                                   \
        if (status[r] == 0) status[r] = prefix##_run(ctx, buffers + (long)r * nargs);       \
        if (ctx) prefix##_destroy(ctx);                                                     \
      });                                                                                   \
    for (auto& t : ranks) t.join();                                                         \
    for (int s : status)                                                                    \
      if (s) return s;                                                                      \
    return 0;                                                                               \
  }
