// ---- ccopt host runtime: how a generated program meets its caller, its device and NCCL ---------
// - Errors: every failed CUDA, cuBLAS or NCCL call becomes a message naming the rank and the call
//   (`last_error`, thread-local), which the binding raises as a Python exception.
// - Ordering: a run starts after everything already queued on the caller's stream(s) (an event
//   recorded there, waited on by every program stream) and the caller's stream waits for the
//   run's end with events: no host synchronization unless asked for.
// - NCCL faults: communicators are non-blocking; the host polls ncclCommGetAsyncError while it
//   waits, with a timeout, and on any failure aborts them (ncclCommAbort) instead of leaving
//   peers hanging or destroying communicators with work in flight.

#include <chrono>
#include <cstdarg>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#define CCOPT_CHECK_CUDA(call)                                                                  \
  do {                                                                                          \
    cudaError_t ccopt_err_ = (call);                                                            \
    if (ccopt_err_ != cudaSuccess)                                                              \
      return ccopt_rt::fail("%s failed: %s (line %d)", ccopt_rt::call_name(#call).c_str(),      \
                            cudaGetErrorString(ccopt_err_), __LINE__);                          \
  } while (0)

#define CCOPT_CHECK_BLAS(call)                                                                  \
  do {                                                                                          \
    cublasStatus_t ccopt_err_ = (call);                                                         \
    if (ccopt_err_ != CUBLAS_STATUS_SUCCESS)                                                    \
      return ccopt_rt::fail("%s failed with status %d (line %d)",                               \
                            ccopt_rt::call_name(#call).c_str(), (int)ccopt_err_, __LINE__);     \
  } while (0)

// Used where `ctx` is the program's Context: the call's text names its communicator and stream.
#define CCOPT_CHECK_NCCL(call)                                                                  \
  do {                                                                                          \
    if (ccopt_rt::nccl_issued(ctx->host, (call), #call, __LINE__) != 0) return -1;              \
  } while (0)

// An init or split that makes the communicator *made: returns once it exists and is ready.
#define CCOPT_CHECK_NCCL_MADE(call, made)                                                       \
  do {                                                                                          \
    if (ccopt_rt::comm_made(ctx->host, (call), (made), #call, __LINE__) != 0) return -1;        \
  } while (0)

namespace ccopt_rt {
namespace {

thread_local std::string last_error;
thread_local int current_rank = -1;

int fail(const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  last_error = current_rank >= 0 ? "rank " + std::to_string(current_rank) + ": " + text : text;
  std::fprintf(stderr, "ccopt: %s\n", last_error.c_str());
  return -1;
}

// "ncclAllReduce(a, b, ...)" -> "ncclAllReduce"
std::string call_name(const char* call) {
  std::string text(call);
  return text.substr(0, text.find('('));
}

// The N of "ctx->comms[N]" (or of another table) in a call's text; -1 when absent.
int index_after(const char* call, const char* table) {
  const char* at = std::strstr(call, table);
  return at ? std::atoi(at + std::strlen(table)) : -1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What the host side of a program keeps: its device, communicators and streams (pointers into
// the Context), the events that order it with its caller, one marker event after each NCCL call
// of the current run (to name the call that did not complete) and why it failed, if it did.
struct Host {
  int rank = 0;
  int device = 0;
  double timeout_s = 0;  // <= 0: wait forever
  std::vector<ncclComm_t*> comms;
  std::vector<std::string> comm_names;
  cudaStream_t* streams = nullptr;
  int nstreams = 0;
  std::vector<cudaEvent_t> entry;  // one per caller stream
  std::vector<cudaEvent_t> exit;   // one per program stream
  std::vector<cudaEvent_t> marks;
  std::vector<std::string> mark_names;
  std::vector<int> mark_comms;  // the communicator slot of each marked call
  int nmarks = 0;
  int group_depth = 0;
  int group_stream = -1;
  int group_comm = -1;
  std::string group_calls;
  bool in_flight = false;
  std::string broken;  // non-empty once the communicators were aborted
};

// Every communicator aborted (ncclCommAbort also stops their work in flight); later runs refuse.
void abort_all(Host& h, const std::string& why) {
  for (ncclComm_t* slot : h.comms)
    if (*slot) {
      ncclCommAbort(*slot);
      *slot = nullptr;
    }
  if (h.broken.empty()) h.broken = why;
  h.in_flight = false;
}

// The NCCL call of the current run to blame: the first that has not completed (on communicator
// slot `comm`, when one is given), else the last issued there (an aborted call completes).
std::string unfinished(Host& h, int comm = -1) {
  int last = -1;
  for (int i = 0; i < h.nmarks; ++i) {
    if (comm >= 0 && h.mark_comms[i] != comm) continue;
    if (cudaEventQuery(h.marks[i]) != cudaSuccess) return h.mark_names[i];
    last = i;
  }
  return last >= 0 ? h.mark_names[last] : "the program's work";
}

// An error a communicator reports asynchronously (a peer died, a network error): -1 with the
// communicator and the first unfinished call named.
int check_async(Host& h, const std::string& during) {
  for (size_t g = 0; g < h.comms.size(); ++g) {
    if (!*h.comms[g]) continue;
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(*h.comms[g], &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      const std::string call = during.empty() ? unfinished(h, (int)g) : during;
      fail("%s failed: communicator %s reports %s", call.c_str(), h.comm_names[g].c_str(),
           ncclGetErrorString(state));
      abort_all(h, last_error);
      return -1;
    }
  }
  return 0;
}

// Poll until `done()`, watching the communicators and the clock; abort them on a failure.
template <class Done>
int poll(Host& h, Done done, const std::string& during) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    int state = done();
    if (state < 0) return -1;
    if (state > 0) return 0;
    if (check_async(h, during) != 0) return -1;
    if (h.timeout_s > 0 && seconds_since(start) > h.timeout_s) {
      fail("%s did not complete within %g s (timeout_s); the communicators were aborted",
           during.empty() ? unfinished(h).c_str() : during.c_str(), h.timeout_s);
      abort_all(h, last_error);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// A non-blocking communicator call returned ncclInProgress: wait until no communicator is.
int settle(Host& h, const std::string& call) {
  return poll(
      h,
      [&h] {
        for (ncclComm_t* slot : h.comms) {
          ncclResult_t state = ncclSuccess;
          if (*slot && ncclCommGetAsyncError(*slot, &state) == ncclSuccess && state == ncclInProgress) return 0;
        }
        return 1;
      },
      call);
}

void mark(Host& h, int stream, int comm, const std::string& name) {
  if (h.nmarks == (int)h.marks.size()) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return;  // names are best effort
    h.marks.push_back(e);
    h.mark_names.emplace_back();
    h.mark_comms.push_back(-1);
  }
  if (cudaEventRecord(h.marks[h.nmarks], h.streams[stream]) != cudaSuccess) return;
  h.mark_comms[h.nmarks] = comm;
  h.mark_names[h.nmarks++] = name;
}

// After every NCCL call of the program: fail with its name, wait out ncclInProgress, and mark
// its completion on its stream (for a group, once the group ends).
int nccl_issued(Host& h, ncclResult_t result, const char* call, int line) {
  const std::string name = call_name(call);
  // ctx->comms[g] is slot g + 1 (slot 0: the world communicator)
  const int comm = index_after(call, "ctx->comms[") + 1, stream = index_after(call, "ctx->streams[");
  const std::string where = comm > 0 ? " on communicator " + h.comm_names[comm] : "";
  if (result != ncclSuccess && result != ncclInProgress)
    return fail("%s%s failed: %s (line %d)", name.c_str(), where.c_str(), ncclGetErrorString(result), line);
  if (result == ncclInProgress && settle(h, name + where) != 0) return -1;
  if (name == "ncclGroupStart") {
    if (h.group_depth++ == 0) {
      h.group_stream = -1;
      h.group_calls.clear();
    }
  } else if (name == "ncclGroupEnd") {
    if (--h.group_depth == 0 && h.group_stream >= 0)
      mark(h, h.group_stream, h.group_comm, "ncclGroupEnd (" + h.group_calls + ")");
  } else if (h.group_depth > 0) {
    if (stream >= 0) h.group_stream = stream;
    if (comm > 0) h.group_comm = comm;
    if (h.group_calls.find(name) == std::string::npos)
      h.group_calls += (h.group_calls.empty() ? "" : ", ") + name + where;
  } else if (stream >= 0) {
    mark(h, stream, comm, name + where);
  }
  return 0;
}

// A non-blocking init or split is done once the communicator it makes exists and no
// communicator is still in progress. NCCL may return ncclSuccess at once and fill a split's new
// communicator only when its parent's work completes (NCCL 2.28 on an H200 did: the next split
// on the parent then failed with "Attempt to use communicator before the previous operation
// returned ncclSuccess", and a collective on the new one with "comm argument is NULL").
int comm_made(Host& h, ncclResult_t result, ncclComm_t* made, const char* call, int line) {
  if (nccl_issued(h, result, call, line) != 0) return -1;
  return poll(
      h,
      [&h, made] {
        if (!*made) return 0;
        for (ncclComm_t* slot : h.comms) {
          ncclResult_t state = ncclSuccess;
          if (*slot && ncclCommGetAsyncError(*slot, &state) == ncclSuccess && state == ncclInProgress) return 0;
        }
        return 1;
      },
      call_name(call));
}

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// The start of every entry point: the context's device, and no run on aborted communicators.
int enter(Host& h) {
  current_rank = h.rank;
  cudaError_t e = cudaSetDevice(h.device);
  if (e != cudaSuccess) return fail("cudaSetDevice(%d) failed: %s", h.device, cudaGetErrorString(e));
  if (!h.broken.empty())
    return fail("the communicators were aborted after an earlier failure (%s); create a new Program",
                h.broken.c_str());
  return h.in_flight ? check_async(h, "") : 0;
}

// Every program stream waits for what is queued on the caller's streams now.
int order_after(Host& h, void* const* callers, int ncallers) {
  cudaStream_t legacy = nullptr;
  if (ncallers <= 0) {
    callers = reinterpret_cast<void* const*>(&legacy);
    ncallers = 1;
  }
  while ((int)h.entry.size() < ncallers) {
    cudaEvent_t e = nullptr;
    CCOPT_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    h.entry.push_back(e);
  }
  for (int c = 0; c < ncallers; ++c) {
    CCOPT_CHECK_CUDA(cudaEventRecord(h.entry[c], static_cast<cudaStream_t>(callers[c])));
    for (int s = 0; s < h.nstreams; ++s) CCOPT_CHECK_CUDA(cudaStreamWaitEvent(h.streams[s], h.entry[c], 0));
  }
  h.nmarks = 0;
  return 0;
}

// The caller's stream waits for every program stream.
int order_before(Host& h, cudaStream_t caller) {
  for (int s = 0; s < h.nstreams; ++s) {
    CCOPT_CHECK_CUDA(cudaEventRecord(h.exit[s], h.streams[s]));
    CCOPT_CHECK_CUDA(cudaStreamWaitEvent(caller, h.exit[s], 0));
  }
  h.in_flight = true;
  return 0;
}

// Block the host until the last run's work is done, or fail (and abort) on an NCCL error or
// the timeout.
int wait(Host& h) {
  if (!h.in_flight) return 0;
  int status = poll(
      h,
      [&h] {
        for (int s = 0; s < h.nstreams; ++s) {
          cudaError_t q = cudaEventQuery(h.exit[s]);
          if (q == cudaErrorNotReady) return 0;
          if (q != cudaSuccess) return fail("the program's work failed: %s", cudaGetErrorString(q));
        }
        return 1;
      },
      "");
  if (status != 0) {
    abort_all(h, last_error);
    return -1;
  }
  h.in_flight = false;
  return check_async(h, "");
}

// Finish the communicators: wait for work in flight, then finalize and destroy them - or abort
// them when that fails or they failed before.
int shut_down(Host& h) {
  current_rank = h.rank;
  cudaSetDevice(h.device);
  int status = h.broken.empty() ? wait(h) : 0;
  if (h.broken.empty()) {
    for (ncclComm_t* slot : h.comms) {
      if (!*slot) continue;
      ncclResult_t r = ncclCommFinalize(*slot);
      if (r == ncclInProgress) r = settle(h, "ncclCommFinalize") == 0 ? ncclSuccess : ncclInternalError;
      if (r != ncclSuccess) {
        status = fail("ncclCommFinalize failed: %s", ncclGetErrorString(r));
        break;
      }
    }
  }
  if (!h.broken.empty() || status != 0) {
    abort_all(h, "shut down after a failure");
  } else {
    for (ncclComm_t* slot : h.comms)
      if (*slot) {
        ncclCommDestroy(*slot);
        *slot = nullptr;
      }
  }
  for (cudaEvent_t e : h.entry) cudaEventDestroy(e);
  for (cudaEvent_t e : h.exit) cudaEventDestroy(e);
  for (cudaEvent_t e : h.marks) cudaEventDestroy(e);
  h.entry.clear();
  h.exit.clear();
  h.marks.clear();
  return status;
}

}  // namespace
}  // namespace ccopt_rt
// ---- end of ccopt host runtime ------------------------------------------------------------------
