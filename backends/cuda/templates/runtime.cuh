// ---- ccopt runtime: inlined into every generated program -------------------------------------
// The Philox-4x32-10 generator (bit-identical to the reference interpreter),
// scalar helpers with numpy's semantics, and the generic kernels the emitter instantiates:
// strided copies, fills, reductions, softmax, layernorm and an integer gemm.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

// Kernel launches go through one macro so that the CPU harness can run them on host threads.
#ifndef CCOPT_LAUNCH
#define CCOPT_LAUNCH(kernel, grid, block, stream, ...) \
  kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

namespace ccopt_rt {

constexpr int kMaxDims = 8;
constexpr int kThreads = 256;

struct Dims {
  int64_t v[kMaxDims];
};

// A row of a per-rank table as Dims (missing trailing dimensions take `fill`).
inline Dims dims_of(const int64_t* row, int n, int64_t fill) {
  Dims d;
  for (int i = 0; i < kMaxDims; ++i) d.v[i] = i < n ? row[i] : fill;
  return d;
}

inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535) blocks = 65535;
  return (unsigned)blocks;
}

// A block per item (rows, outputs): as many blocks as items, within the grid limit.
inline unsigned blocks_for(int64_t items) {
  if (items < 1) items = 1;
  if (items > 65535) items = 65535;
  return (unsigned)items;
}

// --- Philox-4x32-10 keyed by (seed, global element index) ----------------------------------------
__host__ __device__ inline void philox_round(uint32_t& c0, uint32_t& c1, uint32_t& c2, uint32_t& c3,
                                             uint32_t k0, uint32_t k1) {
  uint64_t p0 = (uint64_t)0xD2511F53u * c0;
  uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
  c0 = n0;
  c1 = lo1;
  c2 = n2;
  c3 = lo0;
}

__host__ __device__ inline uint32_t philox_word(uint64_t seed, uint64_t index) {
  uint64_t block = index >> 2;
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    philox_round(c0, c1, c2, c3, k0, k1);
  }
  switch (index & 3) {
    case 0: return c0;
    case 1: return c1;
    case 2: return c2;
    default: return c3;
  }
}

// The top 24 bits as a float in [0, 1): exactly representable, so every backend agrees.
__host__ __device__ inline float uniform(uint64_t seed, int64_t index) {
  return (float)(philox_word(seed, (uint64_t)index) >> 8) * 5.9604644775390625e-08f;
}

// --- scalars with numpy's semantics ----------------------------------------------------------------
template <class T>
__host__ __device__ inline T maximum(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a > b ? a : b);
}
template <class T>
__host__ __device__ inline T minimum(T a, T b) {
  return (a != a) ? a : (b != b) ? b : (a < b ? a : b);
}
template <class T>
__host__ __device__ inline T div_int(T a, T b) {  // C truncation; numpy gives 0 for x / 0
  if (b == 0) return 0;
  if (b == -1) return (T)(0 - (typename std::make_unsigned<T>::type)a);
  return a / b;
}
template <class T>
__host__ __device__ inline T wrap_add(T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  return (T)((U)a + (U)b);
}
template <class T>
__host__ __device__ inline T wrap_sub(T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  return (T)((U)a - (U)b);
}
template <class T>
__host__ __device__ inline T wrap_mul(T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  return (T)((U)a * (U)b);
}
template <class T>
__host__ __device__ inline T ipow(T base, T exp) {  // MLIR math.ipowi
  if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
  T result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return result;
}
template <class I, class F>
__host__ __device__ inline I float_to_int(F x) {  // x86 semantics of numpy's astype
  const F lo = (F)(I)(((typename std::make_unsigned<I>::type)1) << (sizeof(I) * 8 - 1));
  if (!(x >= lo && x < -lo)) return (I)(((typename std::make_unsigned<I>::type)1) << (sizeof(I) * 8 - 1));
  return (I)x;
}

// --- generic kernels -------------------------------------------------------------------------------

// dst[idx] = src[idx] over an n-d box: both sides strided (slices, concats, transposes, blocks,
// packing for collectives). Dimensions contiguous on both sides are merged at emission, and Index
// is uint32_t when every count and offset fits (32-bit division is several times cheaper).
template <class T, class Index>
__global__ void strided_copy(Index n, int ndim, Dims extent, const T* src, Dims src_stride,
                             T* dst, Dims dst_stride) {
  for (Index i = blockIdx.x * (Index)blockDim.x + threadIdx.x; i < n;
       i += (Index)gridDim.x * blockDim.x) {
    Index rem = i, s = 0, d = 0;
    for (int k = ndim - 1; k >= 0; --k) {
      const Index e = (Index)extent.v[k];
      const Index idx = k == 0 ? rem : rem % e;  // the outermost index needs no division
      rem = k == 0 ? 0 : rem / e;
      s += idx * (Index)src_stride.v[k];
      d += idx * (Index)dst_stride.v[k];
    }
    dst[d] = src[s];
  }
}

// A copy whose sides are contiguous along different dimensions (a transpose: `read` on the
// source, `write` on the destination): 32x32 tiles through shared memory, so that a warp reads
// 32 neighbouring source elements and writes 32 neighbouring destination elements, where the
// plain strided_copy reads such a box a sector per element. A block per tile; blockDim.x a
// multiple of 32.
constexpr int kTile = 32;
template <class T, class Index>
__global__ void tiled_copy(Index tiles, int ndim, Dims extent, const T* src, Dims src_stride,
                           T* dst, Dims dst_stride, int read, int write) {
  __shared__ T tile[kTile][kTile + 1];
  const Index er = (Index)extent.v[read], ew = (Index)extent.v[write];
  const Index tr = (er + kTile - 1) / kTile, tw = (ew + kTile - 1) / kTile;
  const unsigned lane = threadIdx.x % kTile, rows = blockDim.x / kTile;
  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    Index rem = t;
    const Index ir = rem % tr;
    rem /= tr;
    const Index iw = rem % tw;
    rem /= tw;
    Index s = 0, d = 0;  // the tile's corner: the other dimensions, row-major
    for (int k = ndim - 1; k >= 0; --k) {
      if (k == read || k == write) continue;
      const Index e = (Index)extent.v[k];
      const Index idx = rem % e;
      rem /= e;
      s += idx * (Index)src_stride.v[k];
      d += idx * (Index)dst_stride.v[k];
    }
    for (unsigned y = threadIdx.x / kTile; y < kTile; y += rows) {
      const Index a = ir * kTile + lane, b = iw * kTile + y;
      if (a < er && b < ew)
        tile[y][lane] = src[s + a * (Index)src_stride.v[read] + b * (Index)src_stride.v[write]];
    }
    __syncthreads();
    for (unsigned y = threadIdx.x / kTile; y < kTile; y += rows) {
      const Index a = ir * kTile + y, b = iw * kTile + lane;
      if (a < er && b < ew)
        dst[d + a * (Index)dst_stride.v[read] + b * (Index)dst_stride.v[write]] = tile[lane][y];
    }
    __syncthreads();  // the tile is refilled for the block's next one
  }
}

// The tiled copy's (read, write) dimensions when the two sides are contiguous along different
// dimensions of at least 16 elements each, else -1 (a plain strided copy): read * 8 + write.
inline int transposed_dims(int ndim, const Dims& extent, const Dims& src_stride,
                           const Dims& dst_stride) {
  int read = -1, write = -1;
  for (int k = 0; k < ndim; ++k) {
    if (extent.v[k] < 2) continue;
    if (src_stride.v[k] == 1) read = k;
    if (dst_stride.v[k] == 1) write = k;
  }
  if (read < 0 || write < 0 || read == write) return -1;
  if (extent.v[read] < 16 || extent.v[write] < 16) return -1;
  return read * 8 + write;
}

inline int64_t tiles_of(int ndim, const Dims& extent, int read, int write) {
  int64_t tiles = ((extent.v[read] + kTile - 1) / kTile) * ((extent.v[write] + kTile - 1) / kTile);
  for (int k = 0; k < ndim; ++k)
    if (k != read && k != write) tiles *= extent.v[k];
  return tiles;
}

template <class T>
__global__ void fill(int64_t n, T value, T* dst) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = value;
}

enum ReduceKind { kSum = 0, kMean = 1, kMax = 2, kMin = 3, kProd = 4 };

template <class Acc>
__host__ __device__ inline Acc combine(int kind, Acc a, Acc b) {
  if (kind == kSum || kind == kMean) return a + b;
  if (kind == kProd) return a * b;
  return kind == kMax ? maximum(a, b) : minimum(a, b);
}

// Combine one value per thread of the block with a shared-memory tree (blockDim.x a power of two,
// at most kThreads); every thread gets the result. Synchronizes the block.
template <class Acc>
__device__ inline Acc block_reduce(int kind, Acc value, Acc* shared) {
  const unsigned t = threadIdx.x;
  shared[t] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
    if (t < half) shared[t] = combine(kind, shared[t], shared[t + half]);
    __syncthreads();
  }
  Acc result = shared[0];
  __syncthreads();  // shared may be reused by the caller's next reduction
  return result;
}

// Offset of the r-th element (row-major over the given extents) from the strides.
__host__ __device__ inline int64_t offset_of(int64_t r, int ndim, const Dims& extent,
                                             const Dims& stride) {
  int64_t off = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    off += (r % extent.v[k]) * stride.v[k];
    r /= extent.v[k];
  }
  return off;
}

// A reduction's value: its split's partial (`item`), combined by a second pass, when there are
// several splits; else the output (a mean divided by its count).
template <class T, class Acc>
__device__ inline void store_reduced(int kind, int64_t splits, double count, Acc acc,
                                     int64_t item, int64_t o, T* dst, Acc* partial) {
  if (splits > 1) {
    partial[item] = acc;
    return;
  }
  if (kind == kMean) acc = (Acc)(acc / (Acc)count);
  dst[o] = (T)acc;
}

// A thread per (output, split): for reductions over strided (leading) dimensions, where
// neighbouring threads read neighbouring outputs' elements (coalesced). Each split takes one
// range of the reduced elements, so that few outputs over many elements (a bias gradient: 4096
// outputs over 8192 tokens) still fill the GPU; with one split the thread writes the output,
// otherwise its partial goes to `partial[s * out_n + o]` and reduce_finish_strided combines the
// splits in order. Accumulates in Acc (f32 for half types, as the reference does).
template <class T, class Acc>
__global__ void reduce(int64_t out_n, int kept_ndim, Dims kept_extent, Dims kept_stride,
                       int red_ndim, Dims red_extent, Dims red_stride, int64_t red_n,
                       int64_t splits, int kind, double count, Acc init, const T* src, T* dst,
                       Acc* partial) {
  const int64_t per_split = (red_n + splits - 1) / splits;
  for (int64_t item = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; item < out_n * splits;
       item += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = item % out_n, s = item / out_n;
    const int64_t base = offset_of(o, kept_ndim, kept_extent, kept_stride);
    const int64_t end = red_n < (s + 1) * per_split ? red_n : (s + 1) * per_split;
    Acc acc = init;
    for (int64_t r = s * per_split; r < end; ++r)
      acc = combine(kind, acc, (Acc)src[base + offset_of(r, red_ndim, red_extent, red_stride)]);
    store_reduced(kind, splits, count, acc, item, o, dst, partial);
  }
}

// The second pass of a split thread-per-output reduction: a thread per output combines its
// splits' partials in split order (neighbouring threads, neighbouring partials).
template <class T, class Acc>
__global__ void reduce_finish_strided(int64_t out_n, int64_t splits, int kind, double count,
                                      Acc init, const Acc* partial, T* dst) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < out_n;
       o += (int64_t)gridDim.x * blockDim.x) {
    Acc acc = init;
    for (int64_t s = 0; s < splits; ++s) acc = combine(kind, acc, partial[s * out_n + o]);
    if (kind == kMean) acc = (Acc)(acc / (Acc)count);
    dst[o] = (T)acc;
  }
}

// A block per (output, split): the block's threads read the output's reduced elements
// `splits` x blockDim.x apart (consecutive threads, consecutive elements when the reduced
// dimensions are the contiguous trailing ones: `red_flat`) and combine them with a block
// reduction. With one split the block writes the output; otherwise its partial goes to
// `partial[o * splits + s]` and reduce_finish combines the splits - a whole-tensor norm runs on
// up to 256 blocks instead of one thread.
template <class T, class Acc>
__global__ void reduce_blocks(int64_t out_n, int kept_ndim, Dims kept_extent, Dims kept_stride,
                              int red_ndim, Dims red_extent, Dims red_stride, int64_t red_n,
                              int red_flat, int64_t splits, int kind, double count, Acc init,
                              const T* src, T* dst, Acc* partial) {
  __shared__ Acc shared[kThreads];
  for (int64_t item = blockIdx.x; item < out_n * splits; item += gridDim.x) {
    const int64_t o = item / splits, s = item % splits;
    const int64_t base = offset_of(o, kept_ndim, kept_extent, kept_stride);
    Acc acc = init;
    for (int64_t r = s * blockDim.x + threadIdx.x; r < red_n; r += splits * blockDim.x) {
      const int64_t off = red_flat ? r : offset_of(r, red_ndim, red_extent, red_stride);
      acc = combine(kind, acc, (Acc)src[base + off]);
    }
    acc = block_reduce(kind, acc, shared);
    if (threadIdx.x == 0) store_reduced(kind, splits, count, acc, item, o, dst, partial);
  }
}

// The second pass of a split reduction: a block per output combines its splits' partials.
template <class T, class Acc>
__global__ void reduce_finish(int64_t out_n, int64_t splits, int kind, double count, Acc init,
                              const Acc* partial, T* dst) {
  __shared__ Acc shared[kThreads];
  for (int64_t o = blockIdx.x; o < out_n; o += gridDim.x) {
    Acc acc = init;
    for (int64_t s = threadIdx.x; s < splits; s += blockDim.x)
      acc = combine(kind, acc, partial[o * splits + s]);
    acc = block_reduce(kind, acc, shared);
    if (threadIdx.x == 0) {
      if (kind == kMean) acc = (Acc)(acc / (Acc)count);
      dst[o] = (T)acc;
    }
  }
}

// exp in the accumulation type: expf for float (half types accumulate in float), exp for double.
__host__ __device__ inline float exp_acc(float x) { return expf(x); }
__host__ __device__ inline double exp_acc(double x) { return exp(x); }
__host__ __device__ inline float sqrt_acc(float x) { return sqrtf(x); }
__host__ __device__ inline double sqrt_acc(double x) { return sqrt(x); }

// Softmax over contiguous rows (the last dimension): a block per row, its threads reading
// consecutive elements. exp is computed once per element (kept in dst when T is the
// accumulation type, recomputed in float for half types rather than re-read rounded).
template <class T, class Acc>
__global__ void softmax_rows(int64_t rows, int64_t len, const T* src, T* dst) {
  __shared__ Acc shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = src + r * len;
    T* y = dst + r * len;
    Acc m = (Acc)-INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = maximum(m, (Acc)x[j]);
    m = block_reduce((int)kMax, m, shared);
    Acc total = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const Acc e = exp_acc((Acc)x[j] - m);
      if (std::is_same<T, Acc>::value) y[j] = (T)e;
      total += e;
    }
    total = block_reduce((int)kSum, total, shared);
    const Acc inv = (Acc)1 / total;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const Acc e = std::is_same<T, Acc>::value ? (Acc)y[j] : exp_acc((Acc)x[j] - m);
      y[j] = (T)(e * inv);
    }
  }
}

// Softmax along a strided dimension (`inner` > 1): a thread per row, neighbouring threads on
// neighbouring rows, so every pass reads consecutive addresses across the warp.
template <class T, class Acc>
__global__ void softmax(int64_t rows, int64_t inner, int64_t len, const T* src, T* dst) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
       r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc m = (Acc)-INFINITY;
    for (int64_t j = 0; j < len; ++j) m = maximum(m, (Acc)src[base + j * inner]);
    Acc total = 0;
    for (int64_t j = 0; j < len; ++j) {
      const Acc e = exp_acc((Acc)src[base + j * inner] - m);
      if (std::is_same<T, Acc>::value) dst[base + j * inner] = (T)e;
      total += e;
    }
    const Acc inv = (Acc)1 / total;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t at = base + j * inner;
      const Acc e = std::is_same<T, Acc>::value ? (Acc)dst[at] : exp_acc((Acc)src[at] - m);
      dst[at] = (T)(e * inv);
    }
  }
}

// Layernorm over contiguous rows: a block per row; mean, then the mean squared deviation, by
// block reductions over coalesced reads.
template <class T, class Acc>
__global__ void layernorm(int64_t rows, int64_t len, double eps, const T* src, const T* weight,
                          const T* bias, T* dst) {
  __shared__ Acc shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = src + r * len;
    Acc sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += (Acc)x[j];
    const Acc mean = block_reduce((int)kSum, sum, shared) / (Acc)len;
    Acc sq = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const Acc d = (Acc)x[j] - mean;
      sq += d * d;
    }
    const Acc var = block_reduce((int)kSum, sq, shared) / (Acc)len;
    const Acc root = sqrt_acc(var + (Acc)eps);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      Acc y = ((Acc)x[j] - mean) / root;
      if (weight) y = y * (Acc)weight[j];
      if (bias) y = y + (Acc)bias[j];
      dst[r * len + j] = (T)y;
    }
  }
}

// Integer matmul (cuBLAS has no i32/i64 gemm): one thread per output element.
template <class T>
__global__ void gemm_int(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a, int64_t a_batch,
                         int64_t a_row, int64_t a_col, const T* b, int64_t b_batch, int64_t b_row,
                         int64_t b_col, T* c) {
  int64_t total = batch * m * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t bi = i / (m * n), row = (i / n) % m, col = i % n;
    T acc = 0;
    for (int64_t j = 0; j < k; ++j)
      acc = wrap_add(acc, wrap_mul(a[bi * a_batch + row * a_row + j * a_col],
                                   b[bi * b_batch + j * b_row + col * b_col]));
    c[i] = acc;
  }
}

}  // namespace ccopt_rt
// ---- end of ccopt runtime ---------------------------------------------------------------------
