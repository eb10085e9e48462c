// Host stand-in for the cuBLAS calls ccopt emits: column-major strided batched gemm with
// f32 (or f64) accumulation, queued on the handle's stream like the real call.
#pragma once

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_16F = 2, CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

struct cublasContext {
  cudaStream_t stream = nullptr;
};
typedef cublasContext* cublasHandle_t;

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

namespace ccopt_host {
inline double load(const void* p, cudaDataType t, long long i) {
  switch (t) {
    case CUDA_R_16F: return (float)static_cast<const __half*>(p)[i];
    case CUDA_R_16BF: return (float)static_cast<const __nv_bfloat16*>(p)[i];
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    default: return static_cast<const double*>(p)[i];
  }
}
inline void store(void* p, cudaDataType t, long long i, double v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __half((float)v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __nv_bfloat16((float)v); break;
    case CUDA_R_32F: static_cast<float*>(p)[i] = (float)v; break;
    default: static_cast<double*>(p)[i] = v; break;
  }
}
// TF32 keeps 10 of f32's 23 mantissa bits (round to nearest even), as tensor cores read inputs.
inline double tf32(double v) {
  uint32_t u = float_bits((float)v);
  if ((u & 0x7F800000u) == 0x7F800000u) return v;  // inf, nan
  u = (u + 0xFFFu + ((u >> 13) & 1u)) & 0xFFFFE000u;
  return bits_float(u);
}
template <class Acc>
inline void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* A,
                 cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb,
                 long long sb, void* C, cudaDataType ct, int ldc, long long sc, int batch,
                 bool round_tf32 = false) {
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        Acc acc = 0;
        for (int l = 0; l < k; ++l) {
          Acc x = (Acc)load(A, at, b * sa + (ta == CUBLAS_OP_N ? i + (long long)l * lda : l + (long long)i * lda));
          Acc y = (Acc)load(B, bt, b * sb + (tb == CUBLAS_OP_N ? l + (long long)j * ldb : j + (long long)l * ldb));
          if (round_tf32) {
            x = (Acc)tf32((double)x);
            y = (Acc)tf32((double)y);
          }
          acc += x * y;
        }
        store(C, ct, b * sc + i + (long long)j * ldc, (double)acc);
      }
}
}  // namespace ccopt_host

inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb,
    long long sb, const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
    cublasComputeType_t compute, cublasGemmAlgo_t) {
  (void)alpha;  // ccopt always computes C = A B (alpha 1, beta 0)
  (void)beta;
  // cuBLAS's argument checks (numbered as cublasGemmEx's parameters, handle first): a leading
  // dimension below max(1, rows stored) is refused even where the matrix is empty
  const auto rows = [](int stored) { return stored > 1 ? stored : 1; };
  const int illegal = m < 0 ? 4 : n < 0 ? 5 : k < 0 ? 6 : batch < 0 ? 21
                    : lda < rows(ta == CUBLAS_OP_N ? m : k) ? 10
                    : ldb < rows(tb == CUBLAS_OP_N ? k : n) ? 13
                    : ldc < rows(m) ? 17 : 0;
  if (illegal) {
    std::fprintf(stderr, " ** On entry to GEMM_EX  parameter number %d had an illegal value\n", illegal);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  ccopt_host::enqueue(h->stream, [=] {
    if (compute == CUBLAS_COMPUTE_64F)
      ccopt_host::gemm<double>(ta, tb, m, n, k, A, at, lda, sa, B, bt, ldb, sb, C, ct, ldc, sc, batch);
    else
      ccopt_host::gemm<float>(ta, tb, m, n, k, A, at, lda, sa, B, bt, ldb, sb, C, ct, ldc, sc, batch,
                              compute == CUBLAS_COMPUTE_32F_FAST_TF32);
  });
  return CUBLAS_STATUS_SUCCESS;
}
