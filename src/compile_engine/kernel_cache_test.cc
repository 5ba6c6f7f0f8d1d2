// Tests of the on-disk kernel cache (kernel_cache.h): the entry format and its validation, the
// directory setting, and the LLVM JIT through the compile engine: a second engine loads what
// the first stored and generates no code, different kernels never share an entry, corrupt
// entries are rebuilt, concurrent writers leave a valid entry, and an unwritable directory
// only turns the cache off. Every test uses a fresh temporary directory, never the user's home.
#include "passes/compile_engine/kernel_cache.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compile_engine/jit/kernels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/support/status_macros.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;

// A fresh empty directory under the test temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "/hetpass_kernel_cache_XXXXXX";
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The .hpk entries of `dir`, and whether any temporary file was left behind.
std::vector<std::string> Entries(const std::string& dir, bool* leftovers = nullptr) {
  std::vector<std::string> entries;
  if (leftovers != nullptr) *leftovers = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".hpk") {
      entries.push_back(e.path().string());
    } else if (leftovers != nullptr) {
      *leftovers = true;
    }
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// ---- the entry format -----------------------------------------------------------------------

// Tests that an entry decodes to its payload under its own key and under no other.
TEST(KernelCacheFormat, RoundTripsUnderItsKeyOnly) {
  const std::string entry = KernelCache::EncodeEntry("key one", std::string("obj\0ect", 7));
  EXPECT_EQ(KernelCache::DecodeEntry(entry, "key one"), std::string("obj\0ect", 7));
  EXPECT_EQ(KernelCache::DecodeEntry(entry, "key two"), std::nullopt);
  EXPECT_EQ(KernelCache::DecodeEntry(entry, "key on"), std::nullopt);
  EXPECT_EQ(KernelCache::DecodeEntry(KernelCache::EncodeEntry("k", ""), "k"), "");
}

// Tests that every truncation and every single flipped byte of an entry is rejected.
TEST(KernelCacheFormat, RejectsEveryTruncationAndFlippedByte) {
  const std::string key = "hetpass kernel cache key\nmodule text";
  const std::string entry = KernelCache::EncodeEntry(key, "payload bytes of an object file");
  for (size_t n = 0; n < entry.size(); ++n) {
    EXPECT_EQ(KernelCache::DecodeEntry(entry.substr(0, n), key), std::nullopt) << "length " << n;
  }
  EXPECT_EQ(KernelCache::DecodeEntry(entry + "x", key), std::nullopt) << "one byte too many";
  for (size_t i = 0; i < entry.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string garbled = entry;
      garbled[i] = static_cast<char>(garbled[i] ^ (1 << bit));
      EXPECT_EQ(KernelCache::DecodeEntry(garbled, key), std::nullopt) << "byte " << i;
    }
  }
}

// Tests that an entry of another format version is rejected (its checksum is still right).
TEST(KernelCacheFormat, RejectsAnotherFormatVersion) {
  std::string entry = KernelCache::EncodeEntry("k", "p");
  entry[8] = static_cast<char>(kKernelCacheFormatVersion + 1);
  EXPECT_EQ(KernelCache::DecodeEntry(entry, "k"), std::nullopt);
}

// ---- the directory setting ------------------------------------------------------------------

// Sets or unsets environment variables for one test, restoring them afterwards.
class ScopedEnv {
 public:
  void Set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had) {
        ::setenv(it->name.c_str(), it->value.c_str(), 1);
      } else {
        ::unsetenv(it->name.c_str());
      }
    }
  }

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

// Tests the order: explicit setting, HETPASS_KERNEL_CACHE_DIR, XDG_CACHE_HOME, HOME; "off".
TEST(KernelCacheDirectory, ResolvesSettingEnvironmentXdgHome) {
  ScopedEnv env;
  env.Set("HETPASS_KERNEL_CACHE_DIR", nullptr);
  env.Set("XDG_CACHE_HOME", nullptr);
  env.Set("HOME", "/home/u");
  EXPECT_EQ(KernelCacheDirectory(""), "/home/u/.cache/hetpass/kernels");
  env.Set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(KernelCacheDirectory(""), "/xdg/hetpass/kernels");
  env.Set("HETPASS_KERNEL_CACHE_DIR", "/env/dir");
  EXPECT_EQ(KernelCacheDirectory(""), "/env/dir");
  EXPECT_EQ(KernelCacheDirectory("/explicit"), "/explicit");
  EXPECT_EQ(KernelCacheDirectory("off"), "");
  env.Set("HETPASS_KERNEL_CACHE_DIR", "off");
  EXPECT_EQ(KernelCacheDirectory(""), "");
  EXPECT_EQ(KernelCacheDirectory("/explicit"), "/explicit");
  env.Set("HETPASS_KERNEL_CACHE_DIR", nullptr);
  env.Set("XDG_CACHE_HOME", nullptr);
  env.Set("HOME", nullptr);
  EXPECT_EQ(KernelCacheDirectory(""), "");
  EXPECT_EQ(KernelCache::ForSetting(""), nullptr);
}

// Tests that "off" gives an engine without a cache, and a path one in that directory.
TEST(KernelCacheDirectory, EngineOptionSelectsTheCache) {
  TempDir dir;
  CompileEngineOptions off;
  off.kernel_cache_dir = "off";
  EXPECT_EQ(CompileEngine(off).kernel_cache(), nullptr);
  CompileEngineOptions on;
  on.kernel_cache_dir = dir.path();
  CompileEngine engine(on);
  ASSERT_NE(engine.kernel_cache(), nullptr);
  EXPECT_EQ(engine.kernel_cache()->dir(), dir.path());
}

// ---- the JIT through the compile engine -----------------------------------------------------

constexpr char kAddRelu[] = R"(
def @f(%a: f32[n, 33], %b: f32[33]) -> f32[n, 33] attributes {primitive = true} {
  %s = add(%a, %b) : f32[n, 33]
  %r = nn.relu(%s) : f32[n, 33]
  return %r
}
)";
constexpr char kSubRelu[] = R"(
def @f(%a: f32[n, 33], %b: f32[33]) -> f32[n, 33] attributes {primitive = true} {
  %s = subtract(%a, %b) : f32[n, 33]
  %r = nn.relu(%s) : f32[n, 33]
  return %r
}
)";
// An injective group (the other JIT path).
constexpr char kTransposeAdd[] = R"(
def @f(%a: f32[4, 6], %b: f32[6, 4]) -> f32[6, 4] attributes {primitive = true} {
  %t = transpose(%a) {axes = [1, 0]} : f32[6, 4]
  %r = add(%t, %b) : f32[6, 4]
  return %r
}
)";

// The symbolic dim `n` of the kernels above is bound to this.
constexpr int64_t kN = 5;

std::vector<int64_t> ConcreteShape(const Type& type) {
  std::vector<int64_t> shape;
  for (const DimExpr& d : type.shape()) shape.push_back(d.is_constant() ? d.constant() : kN);
  return shape;
}

std::vector<Tensor> Inputs(const Function& f, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<Tensor> inputs;
  for (int i = 0; i < f.body().num_params(); ++i) {
    Tensor t = Tensor::Zeros(DType::kF32, ConcreteShape(f.body().param(i)->type()));
    for (int64_t k = 0; k < t.num_elements(); ++k) t.SetDouble(k, dist(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Compiles `f` with `engine` and runs it on `inputs`: the output's bytes.
absl::StatusOr<std::string> CompileAndRun(CompileEngine& engine, const Function& f,
                                          const std::vector<Tensor>& inputs, std::string* impl) {
  ASSIGN_OR_RETURN(std::shared_ptr<const CompiledKernel> kernel, engine.Lower(f, DeviceKind::kCpu));
  if (impl != nullptr) *impl = kernel->Describe();
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  ASSIGN_OR_RETURN(std::unique_ptr<KernelInstance> instance, kernel->Instantiate(constants));
  Tensor out = Tensor::Zeros(DType::kF32, ConcreteShape(f.body().results()[0]->type()));
  std::vector<TensorArg> args;
  for (const Tensor& t : inputs) args.push_back(TensorArg{const_cast<uint8_t*>(t.data()), t.dtype(), t.shape()});
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), out.shape()});
  RETURN_IF_ERROR(instance->Run(args));
  return std::string(reinterpret_cast<const char*>(out.data()), out.nbytes());
}

CompileEngineOptions WithCache(const std::string& dir) {
  CompileEngineOptions options;
  options.kernel_cache_dir = dir;
  return options;
}

int64_t Codegens() { return ProcessJitCounts().codegens; }

// Tests that a second engine (as a second process would) loads the kernels the first stored:
// hits, no code generated, and the same bytes out as without any cache.
TEST(KernelCacheJit, HitAfterMissAcrossTwoEngines) {
  TempDir dir;
  for (const char* text : {kAddRelu, kTransposeAdd}) {
    SCOPED_TRACE(text);
    std::unique_ptr<Module> m = Parse(text);
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    const std::vector<Tensor> inputs = Inputs(f, 3);

    CompileEngine uncached(WithCache("off"));
    absl::StatusOr<std::string> want = CompileAndRun(uncached, f, inputs, nullptr);
    ASSERT_TRUE(want.ok()) << want.status();

    std::string impl;
    int64_t before = Codegens();
    {
      CompileEngine cold(WithCache(dir.path()));
      absl::StatusOr<std::string> got = CompileAndRun(cold, f, inputs, &impl);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, *want);
      const KernelCacheStats s = cold.kernel_cache()->stats();
      EXPECT_EQ(s.hits, 0);
      EXPECT_EQ(s.misses, 1);
      EXPECT_EQ(s.stores, 1);
      EXPECT_EQ(Codegens() - before, 1);
    }
    EXPECT_THAT(impl, ::testing::StartsWith("jit["));  // the JIT made it

    before = Codegens();
    CompileEngine warm(WithCache(dir.path()));
    absl::StatusOr<std::string> got = CompileAndRun(warm, f, inputs, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, *want);
    const KernelCacheStats s = warm.kernel_cache()->stats();
    EXPECT_EQ(s.hits, 1);
    EXPECT_EQ(s.misses, 0);
    EXPECT_EQ(s.stores, 0);
    EXPECT_EQ(Codegens() - before, 0) << "a warm compile generated code";
  }
  EXPECT_EQ(Entries(dir.path()).size(), 2u);
}

// Tests that the key is the same in every process: a forked child, with its own JIT, loads
// what the parent stored without generating code.
TEST(KernelCacheJit, ChildProcessHits) {
  TempDir dir;
  std::unique_ptr<Module> m = Parse(kAddRelu);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  const std::vector<Tensor> inputs = Inputs(f, 4);
  CompileEngine parent(WithCache(dir.path()));
  absl::StatusOr<std::string> want = CompileAndRun(parent, f, inputs, nullptr);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(parent.kernel_cache()->stats().stores, 1);

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // No gtest assertions here: the exit status says what happened.
    const int64_t before = Codegens();
    CompileEngine child(WithCache(dir.path()));
    absl::StatusOr<std::string> got = CompileAndRun(child, f, inputs, nullptr);
    int code = 0;
    if (!got.ok()) code = 1;
    else if (*got != *want) code = 2;
    else if (child.kernel_cache()->stats().hits != 1) code = 3;
    else if (Codegens() != before) code = 4;
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: failed, 2: other bytes, 3: no hit, 4: generated code";
}

// Tests that different kernels get different entries, and that an entry whose file name
// matches but whose key does not (a hash collision, simulated by copying one kernel's entry
// over the other's) is rejected and rebuilt instead of running the wrong code.
TEST(KernelCacheJit, DifferentKernelsNeverShareAnEntry) {
  TempDir dir;
  std::unique_ptr<Module> add = Parse(kAddRelu);
  std::unique_ptr<Module> sub = Parse(kSubRelu);
  ASSERT_NE(add, nullptr);
  ASSERT_NE(sub, nullptr);
  const Function& fa = *add->functions().front();
  const Function& fs = *sub->functions().front();
  const std::vector<Tensor> inputs = Inputs(fa, 5);
  std::string want_add, want_sub;
  {
    CompileEngine uncached(WithCache("off"));
    want_add = *CompileAndRun(uncached, fa, inputs, nullptr);
    want_sub = *CompileAndRun(uncached, fs, inputs, nullptr);
    ASSERT_NE(want_add, want_sub);
  }
  {
    CompileEngine engine(WithCache(dir.path()));
    EXPECT_EQ(*CompileAndRun(engine, fa, inputs, nullptr), want_add);
    EXPECT_EQ(*CompileAndRun(engine, fs, inputs, nullptr), want_sub);
    EXPECT_EQ(engine.kernel_cache()->stats().stores, 2);
  }
  const std::vector<std::string> entries = Entries(dir.path());
  ASSERT_EQ(entries.size(), 2u);
  const std::string a = ReadBytes(entries[0]), b = ReadBytes(entries[1]);
  ASSERT_NE(a, b);
  // Each entry under the other's name.
  WriteBytes(entries[0], b);
  WriteBytes(entries[1], a);
  const int64_t before = Codegens();
  CompileEngine engine(WithCache(dir.path()));
  EXPECT_EQ(*CompileAndRun(engine, fa, inputs, nullptr), want_add);
  EXPECT_EQ(*CompileAndRun(engine, fs, inputs, nullptr), want_sub);
  const KernelCacheStats s = engine.kernel_cache()->stats();
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.rejected, 2);
  EXPECT_EQ(Codegens() - before, 2);
}

// Tests that a truncated, a garbled and an empty entry are each ignored, recompiled and
// overwritten with a valid entry that the next engine hits.
TEST(KernelCacheJit, CorruptEntryIsRebuilt) {
  std::unique_ptr<Module> m = Parse(kAddRelu);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  const std::vector<Tensor> inputs = Inputs(f, 6);
  std::string want;
  {
    CompileEngine uncached(WithCache("off"));
    want = *CompileAndRun(uncached, f, inputs, nullptr);
  }
  for (const char* damage : {"truncated", "garbled", "empty"}) {
    SCOPED_TRACE(damage);
    TempDir dir;
    {
      CompileEngine engine(WithCache(dir.path()));
      ASSERT_EQ(*CompileAndRun(engine, f, inputs, nullptr), want);
    }
    const std::vector<std::string> entries = Entries(dir.path());
    ASSERT_EQ(entries.size(), 1u);
    const std::string good = ReadBytes(entries[0]);
    std::string bad = good;
    if (std::string(damage) == "truncated") bad.resize(good.size() * 2 / 3);
    if (std::string(damage) == "garbled") {
      for (size_t i = good.size() - 64; i < good.size(); ++i) bad[i] = static_cast<char>(~bad[i]);
    }
    if (std::string(damage) == "empty") bad.clear();
    WriteBytes(entries[0], bad);
    {
      const int64_t before = Codegens();
      CompileEngine engine(WithCache(dir.path()));
      EXPECT_EQ(*CompileAndRun(engine, f, inputs, nullptr), want);
      const KernelCacheStats s = engine.kernel_cache()->stats();
      EXPECT_EQ(s.hits, 0);
      EXPECT_EQ(s.rejected, 1);
      EXPECT_EQ(s.stores, 1);
      EXPECT_EQ(Codegens() - before, 1);
    }
    EXPECT_EQ(ReadBytes(entries[0]), good) << "the entry was not overwritten";
    CompileEngine engine(WithCache(dir.path()));
    EXPECT_EQ(*CompileAndRun(engine, f, inputs, nullptr), want);
    EXPECT_EQ(engine.kernel_cache()->stats().hits, 1);
  }
}

// Tests that engines compiling the same kernel at once in threads, all missing, all storing,
// leave one valid entry and no temporary files.
TEST(KernelCacheJit, ConcurrentWritersLeaveAValidEntry) {
  TempDir dir;
  std::unique_ptr<Module> m = Parse(kAddRelu);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  const std::vector<Tensor> inputs = Inputs(f, 7);
  std::string want;
  {
    CompileEngine uncached(WithCache("off"));
    want = *CompileAndRun(uncached, f, inputs, nullptr);
  }
  constexpr int kThreads = 6;
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CompileEngine engine(WithCache(dir.path()));
      absl::StatusOr<std::string> r = CompileAndRun(engine, f, inputs, nullptr);
      got[t] = r.ok() ? *r : std::string(r.status().message());
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], want) << "thread " << t;
  bool leftovers = true;
  EXPECT_EQ(Entries(dir.path(), &leftovers).size(), 1u);
  EXPECT_FALSE(leftovers) << "a temporary file was left in the cache directory";
  CompileEngine engine(WithCache(dir.path()));
  EXPECT_EQ(*CompileAndRun(engine, f, inputs, nullptr), want);
  EXPECT_EQ(engine.kernel_cache()->stats().hits, 1);
}

// Tests that processes storing one key while another process reads it never let the reader see
// a partial entry: every load is a miss or the whole payload (large, so a write takes time).
TEST(KernelCacheJit, ConcurrentProcessesNeverShowAPartialEntry) {
  TempDir dir;
  const std::string key = "one key";
  std::vector<std::string> payloads;
  for (char c : {'a', 'b', 'c'}) payloads.push_back(std::string(4 << 20, c));
  std::vector<pid_t> writers;
  for (int w = 0; w < 3; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      KernelCache cache(dir.path());
      for (int i = 0; i < 20; ++i) cache.Store(key, payloads[w]);
      ::_exit(cache.stats().stores == 20 ? 0 : 1);
    }
    writers.push_back(pid);
  }
  // Reads until every writer has exited.
  KernelCache reader(dir.path());
  int partial = 0, whole = 0;
  for (size_t exited = 0; exited < writers.size();) {
    std::optional<std::string> p = reader.Load(key);
    if (p) {
      ++whole;
      if (*p != payloads[0] && *p != payloads[1] && *p != payloads[2]) ++partial;
    }
    for (pid_t& pid : writers) {
      int status = 0;
      if (pid == 0 || ::waitpid(pid, &status, WNOHANG) != pid) continue;
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      pid = 0;
      ++exited;
    }
  }
  EXPECT_EQ(partial, 0);
  EXPECT_EQ(reader.stats().rejected, 0);
  std::optional<std::string> last = reader.Load(key);
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(*last == payloads[0] || *last == payloads[1] || *last == payloads[2]);
  bool leftovers = true;
  EXPECT_EQ(Entries(dir.path(), &leftovers).size(), 1u);
  EXPECT_FALSE(leftovers);
  std::printf("[ info     ] the reader saw %d whole entries while the writers ran\n", whole);
}

// Tests that a cache directory that cannot be created (its parent is a regular file) turns the
// cache into a no-op: the kernel compiles and runs, the failed store is counted.
TEST(KernelCacheJit, UnwritableDirectoryDegradesToNoCache) {
  TempDir dir;
  const std::string file = dir.path() + "/a_file";
  WriteBytes(file, "not a directory");
  std::unique_ptr<Module> m = Parse(kAddRelu);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  const std::vector<Tensor> inputs = Inputs(f, 8);
  std::string want;
  {
    CompileEngine uncached(WithCache("off"));
    want = *CompileAndRun(uncached, f, inputs, nullptr);
  }
  for (int round = 0; round < 2; ++round) {
    CompileEngine engine(WithCache(file + "/kernels"));
    absl::StatusOr<std::string> got = CompileAndRun(engine, f, inputs, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
    const KernelCacheStats s = engine.kernel_cache()->stats();
    EXPECT_EQ(s.hits, 0);
    EXPECT_EQ(s.stores, 0);
    EXPECT_EQ(s.store_failures, 1);
  }
}

}  // namespace
}  // namespace hetpass
