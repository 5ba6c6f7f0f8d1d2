// The seed MLP on OpenBLAS (Debian 0.3.21, pthread flavour, DYNAMIC_ARCH), one thread: one of
// the four candidates for hetpass's CPU kernel library (see compare.sh). OpenBLAS has no
// prepacked-weight API and no fused epilogue, so bias+ReLU is a separate pass over the output;
// the only "prepacking" possible is transposing W once (variant nn).
//
// Variants:
//   nt       cblas_sgemm(RowMajor, NoTrans, Trans) on W[N, K] as stored
//   nt_gemv  cblas_sgemv on W[N, K] (M = 1 only)
//   nn       cblas_sgemm(NoTrans, NoTrans) on W^T[K, N] transposed once at load
// The core type OpenBLAS picked (OPENBLAS_CORETYPE overrides it) is printed on every line.
#include <cblas.h>

#include "mlp_common.h"

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  mlp::Runner r{"openblas", mlp::ParseOptions(argc, argv),
                std::string("core=") + openblas_get_corename()};
  const auto& layers = r.layers;
  std::vector<std::vector<float>> wt;
  for (const mlp::Layer& L : layers) wt.push_back(mlp::Transposed(L));
  std::vector<float> h[2] = {std::vector<float>(64 * 512), std::vector<float>(64 * 256)};

  auto forward = [&](const float* x, float* y, int m, bool nn, bool gemv) {
    const float* in = x;
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      const mlp::Layer& L = layers[l];
      float* out = l == mlp::kNumLayers - 1 ? y : h[l].data();
      if (gemv && m == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, L.out, L.in, 1.0f, L.w.data(), L.in, in, 1, 0.0f,
                    out, 1);
      } else if (nn) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, L.out, L.in, 1.0f, in, L.in,
                    wt[l].data(), L.out, 0.0f, out, L.out);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, L.out, L.in, 1.0f, in, L.in,
                    L.w.data(), L.in, 0.0f, out, L.out);
      }
      mlp::BiasRelu(out, L.b.data(), m, L.out, L.relu);
      in = out;
    }
  };
  r.Run("nt", [&](const float* x, float* y, int m) { forward(x, y, m, false, false); });
  r.Run("nt_gemv", [&](const float* x, float* y, int m) { forward(x, y, m, false, true); }, {1});
  r.Run("nn", [&](const float* x, float* y, int m) { forward(x, y, m, true, false); });
  return r.ExitCode();
}
