// NCCL's API types, codes and messages (nccl.h's, as the generated code uses them), for the
// harnesses that stand in for NCCL: the CPU harness (nccl_host.h) and the shared-GPU one
// (../shared_gpu/nccl.h).
#pragma once

#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
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
#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
} ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER \
  { NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT }

inline const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "internal error - please report this issue to the NCCL developers";
  }
}

namespace ccopt_nccl {

// Bytes per element of an NCCL data type.
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

// The state every member of one communicator shares, found by its unique id: the first member to
// arrive makes it (for `nranks` members), the others get the same one.
template <class Shared>
std::shared_ptr<Shared> shared_state(const ncclUniqueId& id, int nranks) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Shared>> registry;
  std::lock_guard<std::mutex> lock(mu);
  auto& entry = registry[std::string(id.internal, strnlen(id.internal, sizeof(id.internal)))];
  if (!entry) entry = std::make_shared<Shared>(nranks);
  return entry;
}

}  // namespace ccopt_nccl
