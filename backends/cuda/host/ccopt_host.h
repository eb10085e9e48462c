// CPU harness for ccopt's generated CUDA: compile a generated .cu with
//   g++ -std=c++20 -x c++ -DCCOPT_HOST -I backends/cuda/host -I backends/nccl/host prog.cu
// and the same code runs on the host. It maps CUDA's kernel syntax, thread and block indices,
// __syncthreads (threads of a block are fibers that switch at barriers), atomics and launches
// onto the host; cudaStreams onto deferred queues; cuBLAS gemm onto a host gemm; NCCL onto an
// in-process communicator whose ranks are threads (nccl_host.h).
//
// Streams are *not* run in issue order: work is queued per stream and executed when the thread
// (a rank) synchronizes or queries, each step taking the ready stream chosen by
// CCOPT_HOST_SCHEDULE ("low": lowest stream index first, "high": highest first). Only stream
// order and event waits constrain it, so a missing event dependency changes the results of one of
// the two schedules. Queued work may wait for other ranks (NCCL) without blocking the thread, so
// cudaEventQuery/cudaStreamQuery report cudaErrorNotReady as on a GPU. A rank has
// CCOPT_HOST_DEVICES devices (default 8): cudaSetDevice and cudaPointerGetAttributes know which
// device each cudaMalloc'd block is on.
#pragma once

#include <ucontext.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __shared__ static thread_local  // one array per block: its fibers share the host thread
#define __host__
#define __forceinline__ inline

// --- half precision, round to nearest even (as numpy and ml_dtypes convert) -------------------------
namespace ccopt_host {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7C00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return (uint16_t)half;
}
inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    if (!mant) return bits_float(sign);
    float f = (float)mant * 5.9604644775390625e-08f;  // 2^-24
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
  uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)((x + rounding) >> 16);
}
}  // namespace ccopt_host

struct __half {
  uint16_t bits = 0;
  __half() = default;
  __half(float f) : bits(ccopt_host::float_to_half_bits(f)) {}
  __half(double d) : __half((float)d) {}
  __half(int i) : __half((float)i) {}
  operator float() const { return ccopt_host::half_bits_to_float(bits); }
};
struct __nv_bfloat16 {
  uint16_t bits = 0;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits(ccopt_host::float_to_bf16_bits(f)) {}
  __nv_bfloat16(double d) : __nv_bfloat16((float)d) {}
  __nv_bfloat16(int i) : __nv_bfloat16((float)i) {}
  operator float() const { return ccopt_host::bits_float((uint32_t)bits << 16); }
};
inline float __half2float(__half h) { return (float)h; }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline bool operator!=(__half a, __half b) { return (float)a != (float)b; }
inline bool operator!=(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a != (float)b; }

// --- thread hierarchy: blocks run one after another, a block's threads are fibers -------------------
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace ccopt_host {

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  bool done = false;
};

struct BlockRun {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  size_t current = 0;
  const std::function<void()>* body = nullptr;
};
inline thread_local BlockRun* active_block = nullptr;

inline void fiber_entry() {
  BlockRun* run = active_block;
  threadIdx = dim3((unsigned)run->current);
  (*run->body)();
  run->fibers[run->current].done = true;
  swapcontext(&run->fibers[run->current].context, &run->scheduler);
}

// Run one block: start every thread; a thread that reaches __syncthreads yields to the next;
// the barrier opens when every live thread has reached it.
inline void run_block(unsigned threads, const std::function<void()>& body) {
  constexpr size_t kStack = 64 * 1024;
  BlockRun run;
  run.body = &body;
  run.fibers.resize(threads);
  BlockRun* outer = active_block;
  active_block = &run;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = run.fibers[t];
    f.stack.reset(new char[kStack]);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStack;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
  }
  bool live = true;
  while (live) {
    live = false;
    for (unsigned t = 0; t < threads; ++t) {
      if (run.fibers[t].done) continue;
      run.current = t;
      threadIdx = dim3(t);
      swapcontext(&run.scheduler, &run.fibers[t].context);
      live = live || !run.fibers[t].done;
    }
  }
  active_block = outer;
}

inline void syncthreads() {
  BlockRun* run = active_block;
  if (!run) return;
  size_t me = run->current;
  swapcontext(&run->fibers[me].context, &run->scheduler);
  threadIdx = dim3((unsigned)me);
}

}  // namespace ccopt_host

inline void __syncthreads() { ccopt_host::syncthreads(); }

template <class T>
inline T atomicAdd(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (!ref.compare_exchange_weak(old, (T)(old + value))) {
  }
  return old;
}
template <class T>
inline T atomicMax(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}

// --- CUDA runtime: devices, memory and deferred streams ----------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorNotReady = 600
};
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
constexpr unsigned cudaStreamDefault = 0;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDisableTiming = 2;
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorMemoryAllocation: return "out of memory";
    default: return "invalid argument";
  }
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

namespace ccopt_host {

struct Event {
  std::atomic<long> recorded{0};  // generations recorded (issued)
  std::atomic<long> fired{0};     // generations that have happened
};

// One queued operation. `ready` (when set) says whether it may start: an event wait, or a
// collective waiting for the other ranks (`peer`: other threads make it ready, so a stream
// blocked on it is waiting, not deadlocked).
struct Work {
  std::function<void()> run;
  std::function<bool()> ready;
  bool peer = false;
};

struct Stream {
  int index;
  std::deque<Work> queue;
};

// The device of one rank (thread): its streams, drained together, and the device it has set.
struct Device {
  std::vector<Stream*> streams;
  int current = 0;
};
inline thread_local Device device;

// What a rank (thread) holds: the driver checks that a rank that finished leaks nothing.
struct Live {
  long streams = 0, events = 0, allocations = 0, communicators = 0;
};
inline thread_local Live live;

inline bool schedule_high() {
  const char* s = std::getenv("CCOPT_HOST_SCHEDULE");
  return s && std::string(s) == "high";
}

inline int device_count() {
  const char* s = std::getenv("CCOPT_HOST_DEVICES");
  return s ? std::atoi(s) : 8;
}

enum class Progress { idle, waiting, deadlock };

// Run every operation that may start, the ready stream chosen by the schedule, until none
// may: idle (every queue empty), waiting (for other ranks) or deadlock (on this device's events).
inline Progress progress() {
  bool high = schedule_high();
  for (;;) {
    Stream* pick = nullptr;
    bool any = false, peer = false;
    for (Stream* s : device.streams) {
      if (s->queue.empty()) continue;
      any = true;
      Work& w = s->queue.front();
      if (w.ready && !w.ready()) {
        peer = peer || w.peer;
        continue;
      }
      if (!pick || (high ? s->index > pick->index : s->index < pick->index)) pick = s;
    }
    if (!any) return Progress::idle;
    if (!pick) return peer ? Progress::waiting : Progress::deadlock;
    Work w = std::move(pick->queue.front());
    pick->queue.pop_front();
    if (w.run) w.run();
  }
}

[[noreturn]] inline void deadlock() {
  std::fprintf(stderr, "ccopt host harness: streams deadlocked on event waits\n");
  std::abort();
}

// Progress until `done()`. Waiting on other ranks is bounded by CCOPT_HOST_HANG_S (default
// 120 s) so that a test whose program forgot a timeout fails instead of hanging the suite.
template <class Done>
inline void drain_until(Done done) {
  const char* limit = std::getenv("CCOPT_HOST_HANG_S");
  const double hang = limit ? std::atof(limit) : 120.0;
  auto start = std::chrono::steady_clock::now();
  while (!done()) {
    Progress p = progress();
    if (done() || p == Progress::idle) return;
    if (p == Progress::deadlock) deadlock();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > hang) {
      std::fprintf(stderr, "ccopt host harness: a stream waited %g s on other ranks\n", hang);
      std::abort();
    }
  }
}

inline void drain() {
  drain_until([] {
    for (Stream* s : device.streams)
      if (!s->queue.empty()) return false;
    return true;
  });
}

// Device memory: which device each allocation is on (cudaPointerGetAttributes).
struct Allocation {
  size_t bytes;
  int device;
};
inline std::mutex& allocations_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<uintptr_t, Allocation>& allocations() {
  static std::map<uintptr_t, Allocation> a;
  return a;
}

}  // namespace ccopt_host

struct CUstream_st {
  ccopt_host::Stream stream;
};
typedef CUstream_st* cudaStream_t;
struct CUevent_st {
  ccopt_host::Event event;
};
typedef CUevent_st* cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

namespace ccopt_host {
inline cudaStream_t default_stream() {
  static thread_local CUstream_st legacy{Stream{-1, {}}};
  static thread_local bool registered = false;
  if (!registered) {
    device.streams.push_back(&legacy.stream);
    registered = true;
  }
  return &legacy;
}
// The null stream and the two special handles are this rank's default stream.
inline cudaStream_t resolve(cudaStream_t s) {
  return reinterpret_cast<uintptr_t>(s) <= 2 ? default_stream() : s;
}
inline void enqueue(cudaStream_t s, std::function<void()> f) {
  resolve(s)->stream.queue.push_back(Work{std::move(f)});
}
inline void enqueue_when(cudaStream_t s, std::function<bool()> ready, std::function<void()> f) {
  resolve(s)->stream.queue.push_back(Work{std::move(f), std::move(ready), true});
}
}  // namespace ccopt_host

inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = ccopt_host::device_count();
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= ccopt_host::device_count()) return cudaErrorInvalidDevice;
  ccopt_host::device.current = d;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = ccopt_host::device.current;
  return cudaSuccess;
}

// Device memory starts as garbage, as cudaMalloc's does: all-ones bytes (NaN floats, -1
// integers), so code that reads a buffer before writing it fails the comparison.
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  if (!*p) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xFF, bytes ? bytes : 1);
  std::lock_guard<std::mutex> lock(ccopt_host::allocations_mutex());
  ccopt_host::allocations()[reinterpret_cast<uintptr_t>(*p)] = {bytes ? bytes : 1, ccopt_host::device.current};
  ++ccopt_host::live.allocations;
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  {
    std::lock_guard<std::mutex> lock(ccopt_host::allocations_mutex());
    if (ccopt_host::allocations().erase(reinterpret_cast<uintptr_t>(p))) --ccopt_host::live.allocations;
  }
  std::free(p);
  return cudaSuccess;
}
// Memory from cudaMalloc is device memory of the device current at allocation; anything else
// is unregistered host memory (as CUDA 11+ reports it).
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  *a = {cudaMemoryTypeUnregistered, -2, nullptr, const_cast<void*>(p)};
  std::lock_guard<std::mutex> lock(ccopt_host::allocations_mutex());
  auto& all = ccopt_host::allocations();
  auto it = all.upper_bound(reinterpret_cast<uintptr_t>(p));
  if (it == all.begin()) return cudaSuccess;
  --it;
  if (reinterpret_cast<uintptr_t>(p) < it->first + it->second.bytes)
    *a = {cudaMemoryTypeDevice, it->second.device, const_cast<void*>(p), nullptr};
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  static thread_local int next = 0;
  *s = new CUstream_st{ccopt_host::Stream{next++, {}}};
  ccopt_host::device.streams.push_back(&(*s)->stream);
  ++ccopt_host::live.streams;
  return cudaSuccess;
}
// Priorities order nothing on the host (the harness's schedules are adversarial anyway).
inline cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
// Work still queued on a destroyed stream is dropped (the harness's only difference from CUDA,
// which finishes it): programs wait for their work before destroying their streams.
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  auto& v = ccopt_host::device.streams;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == &s->stream) v.erase(v.begin() + (long)i);
  delete s;
  --ccopt_host::live.streams;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  ccopt_host::Stream* stream = &ccopt_host::resolve(s)->stream;
  ccopt_host::drain_until([stream] { return stream->queue.empty(); });
  return cudaSuccess;
}
inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  if (ccopt_host::progress() == ccopt_host::Progress::deadlock) ccopt_host::deadlock();
  return ccopt_host::resolve(s)->stream.queue.empty() ? cudaSuccess : cudaErrorNotReady;
}
inline cudaError_t cudaDeviceSynchronize() {
  ccopt_host::drain();
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  *e = new CUevent_st();
  ++ccopt_host::live.events;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  --ccopt_host::live.events;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  long generation = ++e->event.recorded;
  ccopt_host::Event* ev = &e->event;
  ccopt_host::enqueue(s, [ev, generation] { ev->fired.store(generation); });
  return cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (ccopt_host::progress() == ccopt_host::Progress::deadlock) ccopt_host::deadlock();
  return e->event.fired.load() >= e->event.recorded.load() ? cudaSuccess : cudaErrorNotReady;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  ccopt_host::Event* ev = &e->event;
  long generation = ev->recorded.load();
  ccopt_host::drain_until([ev, generation] { return ev->fired.load() >= generation; });
  return cudaSuccess;
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  ccopt_host::Event* ev = &e->event;
  long generation = ev->recorded.load();
  ccopt_host::resolve(s)->stream.queue.push_back(
      ccopt_host::Work{nullptr, [ev, generation] { return ev->fired.load() >= generation; }, false});
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
  ccopt_host::enqueue(s, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s) {
  ccopt_host::enqueue(s, [=] { std::memset(dst, value, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  ccopt_host::drain();
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

// Kernels keep their grid-stride loops; the host caps the geometry (any geometry is valid).
// Arguments are evaluated at the launch, as CUDA does (the caller may reuse their storage).
namespace ccopt_host {
template <class Kernel, class... Args>
inline void launch(cudaStream_t stream, unsigned grid, unsigned block, Kernel kernel, Args... args) {
  enqueue(stream, [=] {
    unsigned grid_ = grid < 4u ? grid : 4u;
    unsigned block_ = block < 32u ? block : 32u;
    gridDim = dim3(grid_);
    blockDim = dim3(block_);
    std::function<void()> body = [=] { kernel(args...); };
    for (unsigned b = 0; b < grid_; ++b) {
      blockIdx = dim3(b);
      run_block(block_, body);
    }
  });
}
}  // namespace ccopt_host
#define CCOPT_LAUNCH(kernel, grid, block, stream, ...) \
  ccopt_host::launch((stream), (unsigned)(grid), (unsigned)(block), [](auto... a) { kernel(a...); }, __VA_ARGS__)

#include "cublas_host.h"
#include "nccl_host.h"
