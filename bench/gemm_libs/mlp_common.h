// Shared harness of the GEMM-library comparison (bench/gemm_libs/gemm_<lib>.cc): the seed MLP
// (3-layer dense+bias 1024-512-256-128, ReLU after the first two), deterministic data, a
// double-precision reference, the timing loop and the machine-readable result line.
//
// Each gemm_<lib>.cc links only its own library (BLIS and OpenBLAS both export cblas_* and
// sgemm_: whichever comes first on a link line silently wins), so this header uses nothing but
// the standard library.
//
// Result line, one per (variant, M), `key=value` separated by spaces:
//   RESULT lib=onednn variant=packed M=16 median_us=196.3 p10_us=190.1 p90_us=205.7 reps=5093
//          max_err=1.19e-07 check=ok
// max_err is max |y - ref| / (1 + |ref|) over the final output; check=FAIL (and exit status 1)
// above kTolerance.
#ifndef HETPASS_BENCH_GEMM_LIBS_MLP_COMMON_H_
#define HETPASS_BENCH_GEMM_LIBS_MLP_COMMON_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace mlp {

inline constexpr int kDims[4] = {1024, 512, 256, 128};
inline constexpr int kNumLayers = 3;
inline constexpr int kBatches[3] = {1, 16, 64};
// float32 GEMMs with K <= 1024 and O(1) outputs land near 1e-7; 1e-4 means a wrong result.
inline constexpr double kTolerance = 1e-4;

struct Layer {
  int in = 0;
  int out = 0;
  bool relu = false;
  std::vector<float> w;  // [out, in] row-major (nn.dense's weight layout)
  std::vector<float> b;  // [out]
};

// Deterministic uniform floats in [-scale, scale] (64-bit LCG, no <random> differences).
inline void Fill(std::vector<float>& v, uint64_t seed, double scale) {
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (float& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(s >> 11) / static_cast<double>(1ULL << 53);
    x = static_cast<float>((2 * u - 1) * scale);
  }
}

inline std::vector<Layer> MakeLayers() {
  std::vector<Layer> layers(kNumLayers);
  for (int l = 0; l < kNumLayers; ++l) {
    Layer& L = layers[l];
    L.in = kDims[l];
    L.out = kDims[l + 1];
    L.relu = l < 2;
    L.w.resize(static_cast<size_t>(L.out) * L.in);
    L.b.resize(L.out);
    Fill(L.w, 100 + l, 1.0 / std::sqrt(static_cast<double>(L.in)));  // keeps outputs O(1)
    Fill(L.b, 200 + l, 0.5);
  }
  return layers;
}

inline std::vector<float> MakeInput(int m) {
  std::vector<float> x(static_cast<size_t>(m) * kDims[0]);
  Fill(x, 7 + m, 1.0);
  return x;
}

// The MLP in double precision.
inline std::vector<double> Reference(const std::vector<Layer>& layers, const std::vector<float>& x,
                                     int m) {
  std::vector<double> cur(x.begin(), x.end());
  for (const Layer& L : layers) {
    std::vector<double> next(static_cast<size_t>(m) * L.out);
    for (int i = 0; i < m; ++i) {
      for (int n = 0; n < L.out; ++n) {
        double acc = L.b[n];
        for (int k = 0; k < L.in; ++k)
          acc += cur[static_cast<size_t>(i) * L.in + k] * L.w[static_cast<size_t>(n) * L.in + k];
        next[static_cast<size_t>(i) * L.out + n] = L.relu ? std::max(acc, 0.0) : acc;
      }
    }
    cur = std::move(next);
  }
  return cur;
}

inline double MaxError(const float* y, const std::vector<double>& ref) {
  double err = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::abs(static_cast<double>(y[i]) - ref[i]) / (1 + std::abs(ref[i]));
    err = std::max(err, std::isnan(e) ? 1e30 : e);
  }
  return err;
}

// y[m, n] += bias, then ReLU if asked: the epilogue for libraries without fused post-ops.
inline void BiasRelu(float* y, const float* bias, int m, int n, bool relu) {
  for (int i = 0; i < m; ++i) {
    float* row = y + static_cast<size_t>(i) * n;
    if (relu) {
      for (int j = 0; j < n; ++j) row[j] = std::max(row[j] + bias[j], 0.0f);
    } else {
      for (int j = 0; j < n; ++j) row[j] += bias[j];
    }
  }
}

// W[out, in] -> W^T[in, out] (the "NN" layout some kernels want), done once at load.
inline std::vector<float> Transposed(const Layer& L) {
  std::vector<float> t(L.w.size());
  for (int n = 0; n < L.out; ++n)
    for (int k = 0; k < L.in; ++k)
      t[static_cast<size_t>(k) * L.out + n] = L.w[static_cast<size_t>(n) * L.in + k];
  return t;
}

struct Options {
  double seconds = 1.0;  // minimum timed time per point
  int min_reps = 200;    // minimum forwards per point
  std::string only;      // run only this variant ("" = all)
};

inline Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strncmp(a, "--seconds=", 10) == 0) {
      o.seconds = std::atof(a + 10);
    } else if (std::strncmp(a, "--min-reps=", 11) == 0) {
      o.min_reps = std::atoi(a + 11);
    } else if (std::strncmp(a, "--variant=", 10) == 0) {
      o.only = a + 10;
    } else {
      std::fprintf(stderr, "usage: %s [--seconds=S] [--min-reps=N] [--variant=NAME]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// One forward of the whole MLP for batch m: reads x[m, 1024], writes y[m, 128].
using Forward = std::function<void(const float* x, float* y, int m)>;

struct Runner {
  std::string lib;
  Options options;
  std::string extra;  // appended to every RESULT line (e.g. "core=Cooperlake")
  std::vector<Layer> layers = MakeLayers();
  bool failed = false;

  // Checks, then times `forward` for each batch size and prints one RESULT line per M.
  // `batches` restricts a variant that differs from another only for some M.
  void Run(const std::string& variant, const Forward& forward,
           std::vector<int> batches = {kBatches[0], kBatches[1], kBatches[2]}) {
    if (!options.only.empty() && options.only != variant) return;
    for (int m : batches) {
      const std::vector<float> x = MakeInput(m);
      std::vector<float> y(static_cast<size_t>(m) * kDims[kNumLayers], std::nanf(""));
      forward(x.data(), y.data(), m);
      const double err = MaxError(y.data(), Reference(layers, x, m));
      const bool ok = err <= kTolerance;
      failed |= !ok;
      for (int i = 0; i < 20; ++i) forward(x.data(), y.data(), m);  // warm-up
      std::vector<double> us;
      const auto start = std::chrono::steady_clock::now();
      double elapsed = 0;
      while (static_cast<int>(us.size()) < options.min_reps || elapsed < options.seconds) {
        const auto t0 = std::chrono::steady_clock::now();
        forward(x.data(), y.data(), m);
        const auto t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        elapsed = std::chrono::duration<double>(t1 - start).count();
      }
      std::sort(us.begin(), us.end());
      auto pct = [&](double p) { return us[static_cast<size_t>(p * (us.size() - 1))]; };
      std::printf(
          "RESULT lib=%s variant=%s M=%d median_us=%.1f p10_us=%.1f p90_us=%.1f reps=%zu "
          "max_err=%.2e check=%s%s%s\n",
          lib.c_str(), variant.c_str(), m, pct(0.5), pct(0.1), pct(0.9), us.size(), err,
          ok ? "ok" : "FAIL", extra.empty() ? "" : " ", extra.c_str());
      std::fflush(stdout);
    }
  }
  int ExitCode() const { return failed ? 1 : 0; }
};

}  // namespace mlp

#endif  // HETPASS_BENCH_GEMM_LIBS_MLP_COMMON_H_
