// The seed MLP on BLIS (Debian 0.9.0, OpenMP flavour; no Zen 4 config, so zen3 AVX2 kernels),
// one thread: one of the four candidates for hetpass's CPU kernel library (see compare.sh).
// BLIS takes arbitrary row/column strides, so W[N, K] is used in place as a transposed B; it
// has no fused epilogue, so bias+ReLU is a separate pass over the output.
//
// Variants:
//   nt    bli_sgemm(NoTrans, Trans) on W[N, K] as stored
//   nn    bli_sgemm(NoTrans, NoTrans) on W^T[K, N] transposed once at load
//   gemv  bli_sgemv on W[N, K] (M = 1 only)
#include <blis.h>

#include "mlp_common.h"

int main(int argc, char** argv) {
  bli_thread_set_num_threads(1);
  mlp::Runner r{"blis", mlp::ParseOptions(argc, argv),
                std::string("arch=") + bli_arch_string(bli_arch_query_id())};
  const auto& layers = r.layers;
  std::vector<std::vector<float>> wt;
  for (const mlp::Layer& L : layers) wt.push_back(mlp::Transposed(L));
  std::vector<float> h[2] = {std::vector<float>(64 * 512), std::vector<float>(64 * 256)};
  float one = 1.0f, zero = 0.0f;

  enum Kind { kNT, kNN, kGemv };
  auto forward = [&](const float* x, float* y, int m, Kind kind) {
    const float* in = x;
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      const mlp::Layer& L = layers[l];
      float* out = l == mlp::kNumLayers - 1 ? y : h[l].data();
      float* a = const_cast<float*>(in);
      switch (kind) {
        case kNT:
          bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, L.out, L.in, &one, a, L.in, 1,
                    const_cast<float*>(L.w.data()), L.in, 1, &zero, out, L.out, 1);
          break;
        case kNN:
          bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, L.out, L.in, &one, a, L.in, 1,
                    wt[l].data(), L.out, 1, &zero, out, L.out, 1);
          break;
        case kGemv:
          bli_sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, L.out, L.in, &one,
                    const_cast<float*>(L.w.data()), L.in, 1, a, 1, &zero, out, 1);
          break;
      }
      mlp::BiasRelu(out, L.b.data(), m, L.out, L.relu);
      in = out;
    }
  };
  r.Run("nt", [&](const float* x, float* y, int m) { forward(x, y, m, kNT); });
  r.Run("nn", [&](const float* x, float* y, int m) { forward(x, y, m, kNN); });
  r.Run("gemv", [&](const float* x, float* y, int m) { forward(x, y, m, kGemv); }, {1});
  return r.ExitCode();
}
