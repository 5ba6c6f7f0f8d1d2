// The seed MLP on oneDNN 2.6.3 (Debian libdnnl-dev, OpenMP CPU runtime), one thread: one of the
// four candidates for hetpass's CPU kernel library (see compare.sh). oneDNN is the only
// candidate that both prepacks weights into its own blocked layout and fuses bias + ReLU into
// the GEMM (and it has convolutions, which hetpass will need next).
//
// Variants:
//   packed     matmul per M, weights `format_tag::any` reordered once at load, bias + ReLU
//              post-op fused; memory objects made once, data handles set per call
//   runtime_m  one matmul for every M (src/dst rows DNNL_RUNTIME_DIM_VAL), weights reordered
//              once into the layout that primitive asks for, bias + ReLU fused; memory objects
//              made per call (their dims change)
//   plain      matmul per M on W[N, K] as stored (tag `ba`, no reorder), bias + ReLU fused
//   sgemm      dnnl_sgemm('N', 'T') on W[N, K] + a separate bias/ReLU pass
#include <omp.h>

#include <dnnl.hpp>
#include <map>
#include <memory>

#include "mlp_common.h"

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::primitive_attr ReluAttr(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// One layer's matmul for one M (or for runtime M when m == DNNL_RUNTIME_DIM_VAL).
struct LayerPrim {
  dnnl::matmul prim;
  memory::desc src_md, dst_md;
  memory weights, bias;  // weights in the primitive's layout
  memory src, dst;       // made once for a fixed M (handles set per call)
};

LayerPrim MakeLayer(const dnnl::engine& eng, dnnl::stream& s, const mlp::Layer& L, memory::dim m,
                    bool any_weights) {
  const memory::dim k = L.in, n = L.out;
  LayerPrim p;
  p.src_md = memory::desc({m, k}, dt::f32, tag::ab);
  p.dst_md = memory::desc({m, n}, dt::f32, tag::ab);
  const memory::desc user_w({k, n}, dt::f32, tag::ba);  // W[N, K] row-major is [K, N] "ba"
  const memory::desc w_md = any_weights ? memory::desc({k, n}, dt::f32, tag::any) : user_w;
  const memory::desc b_md({1, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.src_md, w_md, b_md, p.dst_md),
                                  ReluAttr(L.relu), eng);
  p.prim = dnnl::matmul(pd);
  memory user_mem(user_w, eng, const_cast<float*>(L.w.data()));
  if (pd.weights_desc() != user_w) {
    p.weights = memory(pd.weights_desc(), eng);
    dnnl::reorder(user_mem, p.weights).execute(s, user_mem, p.weights);
    s.wait();
  } else {
    p.weights = user_mem;
  }
  p.bias = memory(b_md, eng, const_cast<float*>(L.b.data()));
  if (m != DNNL_RUNTIME_DIM_VAL) {
    p.src = memory(p.src_md, eng, DNNL_MEMORY_NONE);
    p.dst = memory(p.dst_md, eng, DNNL_MEMORY_NONE);
  }
  return p;
}

const char* IsaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    default:
      return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);
  mlp::Runner r{"onednn", mlp::ParseOptions(argc, argv),
                std::string("isa=") + IsaName(dnnl_get_effective_cpu_isa())};
  const auto& layers = r.layers;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::vector<float> h[2] = {std::vector<float>(64 * 512), std::vector<float>(64 * 256)};
  auto out_of = [&](int l, float* y) { return l == mlp::kNumLayers - 1 ? y : h[l].data(); };

  // Fixed-M primitives, made once per (variant, M) before timing, as the kernel's cache would.
  for (bool packed : {true, false}) {
    std::map<int, std::vector<LayerPrim>> by_m;
    for (int m : mlp::kBatches)
      for (const mlp::Layer& L : layers) by_m[m].push_back(MakeLayer(eng, s, L, m, packed));
    r.Run(packed ? "packed" : "plain", [&](const float* x, float* y, int m) {
      const float* in = x;
      for (int l = 0; l < mlp::kNumLayers; ++l) {
        LayerPrim& p = by_m[m][l];
        float* out = out_of(l, y);
        p.src.set_data_handle(const_cast<float*>(in));
        p.dst.set_data_handle(out);
        p.prim.execute(s, {{DNNL_ARG_SRC, p.src},
                           {DNNL_ARG_WEIGHTS, p.weights},
                           {DNNL_ARG_BIAS, p.bias},
                           {DNNL_ARG_DST, p.dst}});
        in = out;
      }
      s.wait();
    });
  }

  std::vector<LayerPrim> rt;
  for (const mlp::Layer& L : layers) rt.push_back(MakeLayer(eng, s, L, DNNL_RUNTIME_DIM_VAL, true));
  r.Run("runtime_m", [&](const float* x, float* y, int m) {
    const float* in = x;
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      LayerPrim& p = rt[l];
      float* out = out_of(l, y);
      memory src({{m, layers[l].in}, dt::f32, tag::ab}, eng, const_cast<float*>(in));
      memory dst({{m, layers[l].out}, dt::f32, tag::ab}, eng, out);
      p.prim.execute(s, {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_WEIGHTS, p.weights},
                         {DNNL_ARG_BIAS, p.bias},
                         {DNNL_ARG_DST, dst}});
      in = out;
    }
    s.wait();
  });

  r.Run("sgemm", [&](const float* x, float* y, int m) {
    const float* in = x;
    for (int l = 0; l < mlp::kNumLayers; ++l) {
      const mlp::Layer& L = layers[l];
      float* out = out_of(l, y);
      dnnl_sgemm('N', 'T', m, L.out, L.in, 1.0f, in, L.in, L.w.data(), L.in, 0.0f, out, L.out);
      mlp::BiasRelu(out, L.b.data(), m, L.out, L.relu);
      in = out;
    }
  });
  return r.ExitCode();
}
