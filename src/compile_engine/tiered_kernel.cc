// Tiered kernels (see tiered_kernel.h): the background compiler's queue, and the kernel and
// instance that switch from the reference kernel to the compiled one.
//
// Synchronisation: a job's state moves queued -> running -> done, or queued -> withdrawn,
// under the job's mutex; `done` (an atomic) is set after the result is stored and the result is
// never written again, so a Run that reads `done` with acquire order may read the result
// without the mutex. The compiler's mutex guards its queue, the running count and the first
// failure; where both are held, the compiler's is taken first.
#include "compile_engine/tiered_kernel.h"

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/support/status_macros.h"

namespace hetpass {

struct TieredJob {
  enum class State : uint8_t { kQueued, kRunning, kDone, kWithdrawn };

  std::string what;  // "@f for cpu (llvm.elementwise)"
  TieredCompiler::Compile compile;
  std::mutex mu;
  std::condition_variable cv;
  State state = State::kQueued;
  std::atomic<bool> done{false};
  absl::StatusOr<std::unique_ptr<CompiledKernel>> result = absl::UnknownError("not compiled yet");

  // A queued job is dropped; a running one is waited for (its compile reads the primitive the
  // caller is about to free).
  void Withdraw() {
    std::unique_lock<std::mutex> lock(mu);
    if (state == State::kQueued) {
      state = State::kWithdrawn;
      compile = nullptr;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return state != State::kRunning; });
  }
};

namespace {

class TieredInstance final : public KernelInstance {
 public:
  TieredInstance(std::shared_ptr<TieredJob> job, std::unique_ptr<KernelInstance> tier0,
                 std::vector<const Tensor*> constants)
      : job_(std::move(job)), tier0_(std::move(tier0)), constants_(std::move(constants)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    if (final_ != nullptr) return final_->Run(ctx, args);
    if (job_->done.load(std::memory_order_acquire)) {
      RETURN_IF_ERROR(job_->result.status());
      ASSIGN_OR_RETURN(final_, (*job_->result)->Instantiate(ctx, constants_));
      tier0_.reset();
      return final_->Run(ctx, args);
    }
    return tier0_->Run(ctx, args);
  }

 private:
  std::shared_ptr<TieredJob> job_;  // owns the tier-1 kernel final_ was made from
  std::unique_ptr<KernelInstance> tier0_;
  std::vector<const Tensor*> constants_;  // the call site's, for the tier-1 Instantiate
  std::unique_ptr<KernelInstance> final_;
};

class TieredKernel final : public CompiledKernel {
 public:
  TieredKernel(std::unique_ptr<CompiledKernel> tier0, std::shared_ptr<TieredJob> job)
      : tier0_(std::move(tier0)), job_(std::move(job)) {}
  ~TieredKernel() override { job_->Withdraw(); }

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<KernelInstance> tier0, tier0_->Instantiate(ctx, constants));
    return std::make_unique<TieredInstance>(
        job_, std::move(tier0), std::vector<const Tensor*>(constants.begin(), constants.end()));
  }
  std::string Describe() const override {
    if (!job_->done.load(std::memory_order_acquire)) {
      return absl::StrCat(tier0_->Describe(), " until ", job_->what, " compiles");
    }
    if (!job_->result.ok()) {
      return absl::StrCat(tier0_->Describe(), " (", job_->result.status().message(), ")");
    }
    return (*job_->result)->Describe();
  }
  std::string Listing() const override {
    return job_->done.load(std::memory_order_acquire) && job_->result.ok()
               ? (*job_->result)->Listing()
               : "";
  }

 private:
  std::unique_ptr<CompiledKernel> tier0_;
  std::shared_ptr<TieredJob> job_;
};

}  // namespace

TieredCompiler::~TieredCompiler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const std::shared_ptr<TieredJob>& job : queue_) job->Withdraw();
    queue_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

absl::StatusOr<std::unique_ptr<CompiledKernel>> TieredCompiler::Defer(const Function& primitive,
                                                                      absl::string_view what,
                                                                      Compile compile) {
  absl::StatusOr<std::unique_ptr<CompiledKernel>> tier0 = CompileReferenceKernel(primitive);
  // A group some op of which has no reference kernel cannot start early: compile it now.
  if (!tier0.ok()) return compile();
  auto job = std::make_shared<TieredJob>();
  job->what = std::string(what);
  job->compile = std::move(compile);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(job);
    if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
  }
  cv_.notify_all();
  return std::make_unique<TieredKernel>(*std::move(tier0), std::move(job));
}

void TieredCompiler::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::shared_ptr<TieredJob> job = std::move(queue_.front());
    queue_.pop_front();
    Compile compile;
    {
      std::lock_guard<std::mutex> job_lock(job->mu);
      if (job->state != TieredJob::State::kQueued) {  // withdrawn
        if (queue_.empty() && running_ == 0) idle_.notify_all();
        continue;
      }
      job->state = TieredJob::State::kRunning;
      compile = std::move(job->compile);
    }
    ++running_;
    lock.unlock();
    absl::StatusOr<std::unique_ptr<CompiledKernel>> result = compile();
    if (!result.ok()) {
      result = absl::Status(result.status().code(),
                            absl::StrCat("cannot compile ", job->what, " in the background: ",
                                         result.status().message()));
    }
    // Under the queue's mutex too, so that whoever sees the job done sees it no longer
    // counted as running (pending() after WaitForAll is 0).
    lock.lock();
    if (!result.ok() && first_failure_.ok()) first_failure_ = result.status();
    {
      std::lock_guard<std::mutex> job_lock(job->mu);
      job->result = std::move(result);
      job->state = TieredJob::State::kDone;
      job->done.store(true, std::memory_order_release);
      --running_;
    }
    job->cv.notify_all();
    if (queue_.empty() && running_ == 0) idle_.notify_all();
  }
}

absl::Status TieredCompiler::WaitForAll() {
  std::unique_lock<std::mutex> lock(mu_);
  // Withdrawn jobs leave the queue only when the worker pops them: wait for that too.
  idle_.wait(lock, [&] { return (queue_.empty() && running_ == 0) || stopping_; });
  return first_failure_;
}

int64_t TieredCompiler::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size()) + running_;
}

}  // namespace hetpass
