// Laying out and rendering Pictures with Graphviz's gvc, with Graphviz's messages captured.
//
// Graphviz reports problems through agerr: by default they go to stderr and processing goes
// on. Every Layout/Render call here installs a collector (agseterrf) for its duration, resets
// the error level (agreseterrors), and turns anything at AGERR level or above into a failed
// Status that quotes the message; warnings are kept in Renderer::diagnostics().
#include "viz/viz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace hetpass::viz {
namespace {

std::string* g_messages = nullptr;  // the active collector's buffer (Graphviz is single-threaded)

int CollectMessage(char* text) {
  if (g_messages != nullptr && text != nullptr) g_messages->append(text);
  return 0;
}

// Captures agerr output for its lifetime and sorts it into warnings and errors.
class ScopedErrorCapture {
 public:
  ScopedErrorCapture() {
    previous_buffer_ = g_messages;
    g_messages = &buffer_;
    previous_handler_ = agseterrf(CollectMessage);
    previous_level_ = agseterr(AGWARN);
    agreseterrors();
  }
  ~ScopedErrorCapture() {
    agseterrf(previous_handler_);
    agseterr(previous_level_);
    g_messages = previous_buffer_;
  }

  // Errors (agerrors() >= AGERR or an "Error" line) and warnings since construction.
  void Finish(GraphvizDiagnostics* out) {
    const bool error_level = agerrors() >= AGERR;
    bool in_error = false;
    for (absl::string_view line : absl::StrSplit(buffer_, '\n', absl::SkipWhitespace())) {
      if (absl::StartsWith(line, "Error")) {
        in_error = true;
      } else if (absl::StartsWith(line, "Warning")) {
        in_error = false;
      }
      std::string text(absl::StripAsciiWhitespace(line));
      (in_error ? out->errors : out->warnings).push_back(std::move(text));
    }
    if (error_level && out->errors.empty()) {
      out->errors.push_back(aglasterr() != nullptr ? aglasterr() : "unknown Graphviz error");
    }
  }

 private:
  std::string buffer_;
  std::string* previous_buffer_ = nullptr;
  agusererrf previous_handler_ = nullptr;
  agerrlevel_t previous_level_ = AGWARN;
};

absl::Status ErrorStatus(absl::string_view what, const GraphvizDiagnostics& d) {
  return absl::InternalError(absl::StrCat("graphviz: ", what, ": ", absl::StrJoin(d.errors, "; ")));
}

// Graphviz keeps static caches that point into its context (the pango plugin remembers the last
// font name, a string owned by the context's font dictionary): freeing one context and creating
// another makes the next layout read freed memory (found by ASan). So a process uses one context,
// created on first use and never freed.
GVC_t* SharedContext() {
  static GVC_t* const gvc = gvContext();
  return gvc;
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Picture::~Picture() {
  if (graph_ == nullptr) return;
  if (laid_out_by_ != nullptr) gvFreeLayout(laid_out_by_, graph_);
  agclose(graph_);
}

absl::StatusOr<std::unique_ptr<Renderer>> Renderer::Create() {
  std::unique_ptr<Renderer> r(new Renderer());
  r->gvc_ = SharedContext();
  if (r->gvc_ == nullptr) return absl::InternalError("graphviz: gvContext failed");
  return r;
}

Renderer::~Renderer() = default;  // the context is shared (SharedContext)

absl::Status Renderer::Layout(Picture& picture) {
  if (picture.laid_out_by_ != nullptr) return absl::OkStatus();
  diagnostics_ = {};
  const auto start = std::chrono::steady_clock::now();
  ScopedErrorCapture capture;
  const int rc = gvLayout(gvc_, picture.graph_, picture.engine().c_str());
  capture.Finish(&diagnostics_);
  picture.stats_.layout_seconds = Since(start);
  if (rc != 0 || !diagnostics_.errors.empty()) {
    if (diagnostics_.errors.empty()) {
      diagnostics_.errors.push_back(absl::StrCat("layout engine '", picture.engine(), "' failed"));
    }
    if (rc == 0) gvFreeLayout(gvc_, picture.graph_);
    return ErrorStatus(absl::StrCat("layout with ", picture.engine()), diagnostics_);
  }
  picture.laid_out_by_ = gvc_;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Renderer::Render(Picture& picture, absl::string_view format) {
  if (absl::Status s = Layout(picture); !s.ok()) return s;
  diagnostics_ = {};
  const auto start = std::chrono::steady_clock::now();
  ScopedErrorCapture capture;
  char* data = nullptr;
  unsigned int length = 0;
  const std::string fmt(format);
  const int rc = gvRenderData(gvc_, picture.graph_, fmt.c_str(), &data, &length);
  capture.Finish(&diagnostics_);
  std::string out;
  if (data != nullptr) {
    out.assign(data, length);
    gvFreeRenderData(data);
  }
  picture.stats_.render_seconds += Since(start);
  if (rc != 0 || !diagnostics_.errors.empty()) {
    if (diagnostics_.errors.empty()) {
      diagnostics_.errors.push_back(absl::StrCat("format '", fmt, "' is not available"));
    }
    return ErrorStatus(absl::StrCat("rendering ", fmt), diagnostics_);
  }
  return out;
}

absl::Status Renderer::RenderToFile(Picture& picture, absl::string_view format,
                                    const std::string& path) {
  if (absl::Status s = Layout(picture); !s.ok()) return s;
  diagnostics_ = {};
  const auto start = std::chrono::steady_clock::now();
  ScopedErrorCapture capture;
  const std::string fmt(format);
  const int rc = gvRenderFilename(gvc_, picture.graph_, fmt.c_str(), path.c_str());
  capture.Finish(&diagnostics_);
  picture.stats_.render_seconds += Since(start);
  if (rc != 0 || !diagnostics_.errors.empty()) {
    if (diagnostics_.errors.empty()) {
      diagnostics_.errors.push_back(absl::StrCat("cannot write '", path, "' as ", fmt));
    }
    return ErrorStatus(absl::StrCat("rendering ", fmt, " to '", path, "'"), diagnostics_);
  }
  return absl::OkStatus();
}

namespace {

// The child's report, one line each: "W<warning>", "E<error>", "T<layout s> <render s>".
void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

absl::StatusOr<bool> Renderer::RenderFilesWithin(
    Picture& picture, const std::vector<std::pair<std::string, std::string>>& files,
    double seconds) {
  if (seconds <= 0) {
    for (const auto& [format, path] : files) {
      if (absl::Status s = RenderToFile(picture, format, path); !s.ok()) return s;
    }
    return true;
  }
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pass-viz: pipe() failed");
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError("pass-viz: fork() failed");
  }
  if (pid == 0) {
    // The child: lay out, render, report, and leave without running any destructor or atexit
    // handler of the parent's objects.
    close(fds[0]);
    std::string report;
    for (const auto& [format, path] : files) {
      absl::Status s = RenderToFile(picture, format, path);
      for (const std::string& w : diagnostics_.warnings) absl::StrAppend(&report, "W", w, "\n");
      if (!s.ok()) {
        absl::StrAppend(&report, "E", absl::StrReplaceAll(s.message(), {{"\n", " "}}), "\n");
        break;
      }
    }
    absl::StrAppend(&report, "T", picture.stats_.layout_seconds, " ",
                    picture.stats_.render_seconds, "\n");
    WriteAll(fds[1], report);
    _exit(0);
  }
  close(fds[1]);
  const auto start = std::chrono::steady_clock::now();
  std::string report;
  bool finished = false;
  char buffer[4096];
  for (;;) {
    const double left = seconds - Since(start);
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      finished = true;  // EOF: the child is done
      break;
    }
    report.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!finished) return false;
  diagnostics_ = {};
  bool timed = false;
  for (absl::string_view line : absl::StrSplit(report, '\n', absl::SkipEmpty())) {
    const char kind = line[0];
    line.remove_prefix(1);
    if (kind == 'W') diagnostics_.warnings.emplace_back(line);
    if (kind == 'E') diagnostics_.errors.emplace_back(line);
    if (kind == 'T') {
      std::vector<absl::string_view> t = absl::StrSplit(line, ' ');
      timed = t.size() == 2 && absl::SimpleAtod(t[0], &picture.stats_.layout_seconds) &&
              absl::SimpleAtod(t[1], &picture.stats_.render_seconds);
    }
  }
  if (!diagnostics_.errors.empty()) {
    return absl::InternalError(absl::StrCat("graphviz: ", absl::StrJoin(diagnostics_.errors, "; ")));
  }
  if (!timed || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::InternalError(absl::StrCat(
        "pass-viz: the layout process ended without its report (",
        WIFSIGNALED(wstatus) ? absl::StrCat("signal ", WTERMSIG(wstatus)) : "no report", ")"));
  }
  return true;
}

absl::StatusOr<std::string> RenderModule(const Module& module, const DotOptions& options,
                                         absl::string_view format) {
  auto renderer = Renderer::Create();
  if (!renderer.ok()) return renderer.status();
  auto picture = Picture::Create(module, options);
  if (!picture.ok()) return picture.status();
  return (*renderer)->Render(**picture, format);
}

}  // namespace hetpass::viz
