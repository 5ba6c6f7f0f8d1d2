// The seed MLP on hand-written AVX-512 small-M GEMM micro-kernels, one thread: the experiment
// behind "a GEMM kernel of our own would not beat oneDNN at batch 16" (docs/onnx.md, Against
// ONNX Runtime). It is a bench, not a kernel of the library: nothing in hetpass calls it.
//
// Design (what a small-M kernel can do that a general GEMM does not):
//   weights   W[N, K] packed once at load, in exactly the order the kernel walks them: for each
//             K block of KC, for each panel of NR columns, KC x NR floats. The walk is then one
//             sequential stream (the hardware prefetcher's best case), and a software prefetch
//             PF floats ahead always names the next bytes needed.
//   data      x[M, K] packed per call into row tiles of MR, [KC][MR], so the MR broadcasts of one
//             k step read one cache line.
//   tile      MR x NR accumulators in registers (MR * NR / 16 zmm), bias folded into the first
//             K block, ReLU into the last; rows beyond a whole tile go through a scratch tile.
//
// Variants (MR x NR, prefetch distance in floats): 16x16, 16x16_pf (PF = 1024), 8x32, 15x32
// (30 accumulators: the best in-L1 rate on this VM, 98% of a register-only FMA loop).
// The process exits 0 without RESULT lines on a CPU without AVX-512F.
// GCC 12's _mm512_max_ps passes _mm512_undefined_ps() as its unused merge source, which
// -Wmaybe-uninitialized reports at every inlined use; the value is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "mlp_common.h"

namespace {

constexpr int kKc = 256;  // K block: an MR x KC data tile stays in L1

// Packed weights of one layer for panels of NR columns, in walk order (see the file comment).
std::vector<float> PackWeights(const mlp::Layer& L, int nr) {
  const int n_pad = (L.out + nr - 1) / nr * nr;
  std::vector<float> p(static_cast<size_t>(n_pad) * L.in, 0.0f);
  for (int k0 = 0; k0 < L.in; k0 += kKc) {
    const int kc = std::min(kKc, L.in - k0);
    for (int j = 0; j < L.out; ++j) {
      float* panel = p.data() + static_cast<size_t>(k0) * n_pad + static_cast<size_t>(j / nr) * nr * kc;
      for (int k = 0; k < kc; ++k) panel[k * nr + j % nr] = L.w[static_cast<size_t>(j) * L.in + k0 + k];
    }
  }
  return p;
}

// acc = (first ? bias : c) + ap * bp over kc steps; ReLU on the last K block; stored to c.
template <int MR, int NV, int PF>
__attribute__((target("avx512f"))) void Tile(const float* ap, const float* bp, int kc,
                                             const float* bias, float* c, int ldc, bool first,
                                             bool last, bool relu) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = first ? _mm512_loadu_ps(bias + 16 * v) : _mm512_loadu_ps(c + i * ldc + 16 * v);
    }
  }
  for (int p = 0; p < kc; ++p) {
    __m512 b[NV];
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(bp + (p * NV + v) * 16);
    if (PF > 0) {
      for (int v = 0; v < NV; ++v) {
        _mm_prefetch(reinterpret_cast<const char*>(bp + (p * NV + v) * 16 + PF), _MM_HINT_T0);
      }
    }
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(ap[p * MR + i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      const __m512 y = last && relu ? _mm512_max_ps(acc[i][v], _mm512_setzero_ps()) : acc[i][v];
      _mm512_storeu_ps(c + i * ldc + 16 * v, y);
    }
  }
}

// y[m, out] = x[m, in] W^T + b (ReLU if L.relu), W packed by PackWeights(L, 16 * NV); out must be a
// multiple of 16 * NV (the seed MLP's are).
template <int MR, int NV, int PF>
__attribute__((target("avx512f"))) void Gemm(const mlp::Layer& L, const std::vector<float>& packed,
                                             const float* x, float* y, int m,
                                             std::vector<float>& scratch) {
  constexpr int kNr = 16 * NV;
  const int tiles = (m + MR - 1) / MR;
  scratch.resize(static_cast<size_t>(tiles) * MR * kKc);
  for (int k0 = 0; k0 < L.in; k0 += kKc) {
    const int kc = std::min(kKc, L.in - k0);
    for (int t = 0; t < tiles; ++t) {
      float* dst = scratch.data() + static_cast<size_t>(t) * kc * MR;
      for (int p = 0; p < kc; ++p) {
        for (int i = 0; i < MR; ++i) {
          const int r = t * MR + i;
          dst[p * MR + i] = r < m ? x[static_cast<size_t>(r) * L.in + k0 + p] : 0.0f;
        }
      }
    }
    const bool first = k0 == 0, last = k0 + kc >= L.in;
    for (int j = 0; j < L.out; j += kNr) {
      const float* bp = packed.data() + static_cast<size_t>(k0) * L.out + static_cast<size_t>(j) * kc;
      for (int t = 0; t < tiles; ++t) {
        const float* ap = scratch.data() + static_cast<size_t>(t) * kc * MR;
        const int rows = std::min(MR, m - t * MR);
        float* c = y + static_cast<size_t>(t) * MR * L.out + j;
        if (rows == MR) {
          Tile<MR, NV, PF>(ap, bp, kc, L.b.data() + j, c, L.out, first, last, L.relu);
          continue;
        }
        alignas(64) float tmp[MR * kNr];
        for (int i = 0; i < rows && !first; ++i) std::memcpy(tmp + i * kNr, c + i * L.out, sizeof(float) * kNr);
        Tile<MR, NV, PF>(ap, bp, kc, L.b.data() + j, tmp, kNr, first, last, L.relu);
        for (int i = 0; i < rows; ++i) std::memcpy(c + i * L.out, tmp + i * kNr, sizeof(float) * kNr);
      }
    }
  }
}

template <int MR, int NV, int PF>
void RunVariant(mlp::Runner& r, const std::string& name) {
  std::vector<std::vector<float>> packed;
  for (const mlp::Layer& L : r.layers) packed.push_back(PackWeights(L, 16 * NV));
  std::vector<float> h[2] = {std::vector<float>(64 * 512), std::vector<float>(64 * 256)};
  std::vector<float> scratch;
  r.Run(name, [&](const float* x, float* y, int m) {
    const float* in = x;
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      float* out = l == mlp::kNumLayers - 1 ? y : h[l].data();
      Gemm<MR, NV, PF>(r.layers[l], packed[l], in, out, m, scratch);
      in = out;
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "gemm_lib_own: this CPU has no AVX-512F; nothing measured\n");
    return 0;
  }
  mlp::Runner r{"own", mlp::ParseOptions(argc, argv), "isa=avx512f"};
  RunVariant<16, 1, 0>(r, "16x16");
  RunVariant<16, 1, 1024>(r, "16x16_pf");
  RunVariant<8, 2, 0>(r, "8x32");
  RunVariant<15, 2, 0>(r, "15x32");
  return r.ExitCode();
}
