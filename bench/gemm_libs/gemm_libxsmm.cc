// The seed MLP on LIBXSMM 1.17 (Debian libxsmm-dev, static, JIT code generator), one thread:
// one of the four candidates for hetpass's CPU kernel library (see compare.sh). LIBXSMM
// generates small-GEMM kernels for exact (m, n, k) at run time. Its kernels are column-major
// and refuse a transposed A, so W is transposed once to W^T[K, N] (row-major), which read
// column-major is the [N, K] A operand; a row-major x[M, K] is the column-major B[K, M] and the
// row-major y[M, N] the column-major C[N, M]. No fused epilogue: bias+ReLU is a separate pass.
//
// Variants:
//   tile64   kernels of 64 outputs x M x K, called N / 64 times per layer
//   tile32   the same with 32 outputs (tile128: 128)
//   full     one kernel of N outputs x M x K per layer
#include <libxsmm.h>

#include "mlp_common.h"

namespace {

struct Tiled {
  int tile = 0;
  // kernels[layer][m] (m = 1, 16, 64).
  std::vector<std::vector<libxsmm_smmfunction>> kernels;
};

}  // namespace

int main(int argc, char** argv) {
  libxsmm_init();
  mlp::Runner r{"libxsmm", mlp::ParseOptions(argc, argv),
                std::string("target=") + libxsmm_get_target_arch()};
  const auto& layers = r.layers;
  std::vector<std::vector<float>> wt;
  for (const mlp::Layer& L : layers) wt.push_back(mlp::Transposed(L));
  std::vector<float> h[2] = {std::vector<float>(64 * 512), std::vector<float>(64 * 256)};
  const float one = 1.0f, zero = 0.0f;
  const int flags = LIBXSMM_GEMM_FLAG_BETA_0;

  for (int tile : {64, 32, 128, 0}) {
    // Kernels dispatched once per (layer, M) before timing, as the kernel's cache would.
    std::vector<std::vector<libxsmm_smmfunction>> kern(mlp::kNumLayers);
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      const mlp::Layer& L = layers[l];
      const libxsmm_blasint t = tile == 0 ? L.out : tile, lda = L.out, ldb = L.in, ldc = L.out;
      for (int m : mlp::kBatches) {
        libxsmm_smmfunction f =
            libxsmm_smmdispatch(t, m, L.in, &lda, &ldb, &ldc, &one, &zero, &flags, nullptr);
        if (f == nullptr) {
          std::fprintf(stderr, "libxsmm: no kernel for m=%d n=%d k=%d\n", static_cast<int>(t), m,
                       L.in);
          return 1;
        }
        kern[l].push_back(f);
      }
    }
    const std::string name = tile == 0 ? "full" : "tile" + std::to_string(tile);
    r.Run(name, [&](const float* x, float* y, int m) {
      const int mi = m == 1 ? 0 : m == 16 ? 1 : 2;
      const float* in = x;
      for (int l = 0; l < mlp::kNumLayers; ++l) {
        const mlp::Layer& L = layers[l];
        float* out = l == mlp::kNumLayers - 1 ? y : h[l].data();
        const int t = tile == 0 ? L.out : tile;
        libxsmm_smmfunction f = kern[l][mi];
        for (int n0 = 0; n0 < L.out; n0 += t) f(wt[l].data() + n0, in, out + n0);
        mlp::BiasRelu(out, L.b.data(), m, L.out, L.relu);
        in = out;
      }
    });
  }
  libxsmm_finalize();
  return r.ExitCode();
}
