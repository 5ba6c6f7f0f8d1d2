// The copies pass-viz draws and tabulates: the copy ledger's entries for every function of a
// module, each tied to the binding it describes, in program order.
//
// Source of truth is ComputeCopyLedger (passes/analysis/copy_ledger.h). A device_copy binding
// the ledger does not describe (or a function whose ledger fails) still gets an entry, derived
// from the binding itself (direction from src/dst, bytes from the result type) with
// from_ledger = false and a note saying why, so a picture never hides a copy.
#ifndef HETPASS_TOOLS_VIZ_COPIES_H_
#define HETPASS_TOOLS_VIZ_COPIES_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/ir.h"

namespace hetpass::viz {

struct CopyInfo {
  std::string function;
  LedgerEntry entry;
  bool from_ledger = false;
};

class ModuleCopies {
 public:
  const std::vector<CopyInfo>& copies() const { return copies_; }
  // Problems met while collecting (a function whose ledger failed, copies missing from it).
  const std::vector<std::string>& notes() const { return notes_; }
  // The entries describing a binding (device_copy, or a count copy of a data-dependent op).
  std::vector<const CopyInfo*> ForNode(const Node* node) const;
  int Count(CopyDirection d) const;
  DimExpr Bytes(CopyDirection d) const;

 private:
  friend ModuleCopies CollectCopies(const Module& module);
  std::vector<CopyInfo> copies_;
  std::vector<std::string> notes_;
  absl::flat_hash_map<const Node*, std::vector<int>> by_node_;  // lookup only
};

// The ledger of every function that is not an invoked primitive (an invoked primitive's copies
// are in its caller's ledger, attributed to the invoke).
ModuleCopies CollectCopies(const Module& module);

// True for a device_copy binding (asks the registry's role, never the name).
bool IsDeviceCopy(const Node& node);

}  // namespace hetpass::viz

#endif  // HETPASS_TOOLS_VIZ_COPIES_H_
