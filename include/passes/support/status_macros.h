// Status propagation macros. Debian's Abseil 20220623 ships neither RETURN_IF_ERROR nor
// ASSIGN_OR_RETURN, nor absl/log; these are the project's single definition of both, plus
// HETPASS_CHECK for internal invariants (bugs, never user input).
#ifndef HETPASS_SUPPORT_STATUS_MACROS_H_
#define HETPASS_SUPPORT_STATUS_MACROS_H_

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HETPASS_CONCAT_IMPL_(a, b) a##b
#define HETPASS_CONCAT_(a, b) HETPASS_CONCAT_IMPL_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status hetpass_status_ = (expr);           \
    if (!hetpass_status_.ok()) return hetpass_status_; \
  } while (false)

#define HETPASS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()

// `ASSIGN_OR_RETURN(auto x, F());` declares x from an OK StatusOr, else returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  HETPASS_ASSIGN_OR_RETURN_IMPL_(HETPASS_CONCAT_(hetpass_statusor_, __LINE__), lhs, expr)

// Internal invariant: a failure is a bug in hetpass, so it aborts with the message.
#define HETPASS_CHECK(cond, msg)                                                   \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: internal error: %s (%s)\n", __FILE__, __LINE__, \
                   msg, #cond);                                                    \
      std::abort();                                                                \
    }                                                                              \
  } while (false)

#endif  // HETPASS_SUPPORT_STATUS_MACROS_H_
