// ---- collective algorithms (algo.algorithm): one executor for every algorithm ----------------
// An algorithm is a constant table of rows per rank (ccopt.algorithms.executor): levels in order,
// each its local copies and reductions, then one NCCL group of the sends and receives of the
// messages sent at that level (both ends of a message are in the same level's group on every
// rank: no group waits for one its peer has not reached). Offsets and counts are in chunks of
// `width` elements; a buffer's chunks past its valid elements are short or empty, and a message
// moves the smaller count of its two ends (both ends compute the same). An apply row (the `fn`
// step of a fused all-reduce) hands the chunks at buf/off, which hold output chunks a_off.. , to
// the call's `body`, which launches the fused body's kernel on them.
namespace ccopt_algo {

enum RowKind { kSend = 0, kRecv = 1, kCopy = 2, kReduce = 3, kApply = 4 };
enum Column { kLevel = 0, kKind, kPeer, kBuf, kOff, kABuf, kAOff, kBBuf, kBOff, kCount, kColumns };

template <class T, class Acc>
__global__ void reduce(int64_t n, int kind, T* dst, const T* a, const T* b) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = (T)ccopt_rt::combine<Acc>(kind, (Acc)a[i], (Acc)b[i]);
}

// Elements of chunks off..off+count-1 of a buffer with `valid` elements.
inline int64_t span(int64_t valid, int64_t width, int64_t off, int64_t count) {
  const int64_t low = off * width, high = (off + count) * width;
  const int64_t end = high < valid ? high : valid;
  return end > low ? end - low : 0;
}

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// What a plain collective's algorithm has in place of a fused body: no apply rows.
template <class T>
struct NoBody {
  int operator()(T*, int64_t, int64_t) const { return -1; }
};

// Run one rank's rows on buffers I, O, scratch, staging; `kind` is a ccopt_rt::ReduceKind;
// `body(chunks, first output chunk, count)` runs a fused body (0: launched).
template <class T, class Acc, class Body = NoBody<T>>
int run(Context* ctx, const int32_t* rows, int64_t nrows, T* const* base, const int64_t* valid,
        int64_t width, ncclDataType_t type, int kind, ncclComm_t comm, cudaStream_t stream,
        Body body = Body()) {
  auto count_of = [&](const int32_t* r, bool three) {
    const int64_t n = smaller(span(valid[r[kBuf]], width, r[kOff], r[kCount]),
                              span(valid[r[kABuf]], width, r[kAOff], r[kCount]));
    return three ? smaller(n, span(valid[r[kBBuf]], width, r[kBOff], r[kCount])) : n;
  };
  for (int64_t i = 0; i < nrows;) {
    const int32_t* r = rows + i * kColumns;
    if (r[kKind] == kSend || r[kKind] == kRecv) {
      const int32_t level = r[kLevel];
      CCOPT_CHECK_NCCL(ncclGroupStart());
      for (; i < nrows && rows[i * kColumns + kKind] <= kRecv && rows[i * kColumns] == level; ++i) {
        r = rows + i * kColumns;
        const int64_t n = count_of(r, false);
        T* at = base[r[kBuf]] + r[kOff] * width;
        if (n == 0) continue;
        if (r[kKind] == kSend)
          CCOPT_CHECK_NCCL(ncclSend(at, (size_t)n, type, r[kPeer], comm, stream));
        else
          CCOPT_CHECK_NCCL(ncclRecv(at, (size_t)n, type, r[kPeer], comm, stream));
      }
      CCOPT_CHECK_NCCL(ncclGroupEnd());
      continue;
    }
    if (r[kKind] == kApply) {
      if (body(base[r[kBuf]] + r[kOff] * width, (int64_t)r[kAOff], (int64_t)r[kCount]) != 0)
        return -1;
      ++i;
      continue;
    }
    const int64_t n = count_of(r, r[kKind] == kReduce);
    T* dst = base[r[kBuf]] + r[kOff] * width;
    const T* a = base[r[kABuf]] + r[kAOff] * width;
    if (n > 0 && r[kKind] == kCopy) {
      CCOPT_CHECK_CUDA(cudaMemcpyAsync(dst, a, sizeof(T) * (size_t)n, cudaMemcpyDeviceToDevice, stream));
    } else if (n > 0) {
      const T* b = base[r[kBBuf]] + r[kBOff] * width;
      CCOPT_LAUNCH((reduce<T, Acc>), ccopt_rt::grid_for(n), ccopt_rt::kThreads, stream, n, kind, dst, a, b);
      CCOPT_CHECK_CUDA(cudaGetLastError());
    }
    ++i;
  }
  return 0;
}

}  // namespace ccopt_algo
