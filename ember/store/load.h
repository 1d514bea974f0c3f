#pragma once
// Loading a file's tensors into existing named tensors (a module's parameters), by key.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/store/safetensors.h"

namespace ember::store {

class PtValue;  // ember/store/pytorch.h

/// One ordered renaming rule: every match of `pattern` (an RE2 regex: the common ECMAScript forms,
/// no back-references or lookaround) in a key is replaced by `replacement`, where $1..$9 are the
/// groups, $& the whole match and $$ a dollar sign, as std::regex_replace's format reads them.
struct RenameRule {
  std::string pattern = {};
  std::string replacement = {};
};

struct LoadOptions {
  /// Applied first to every file key: the name to use instead, or nullopt to drop the tensor
  /// (it is then neither loaded nor unexpected). Empty: keys are kept.
  std::function<std::optional<std::string>(const std::string&)> map_key = {};
  /// Applied in order to every file key to give the target name ("$1" refers to groups).
  std::vector<RenameRule> rename = {};
  /// RE2 regexes searched in target names (after renaming): when not empty, only names
  /// matching one of them are loaded or expected.
  std::vector<std::string> include = {};
  /// Names matching any of these are neither loaded nor expected.
  std::vector<std::string> exclude = {};
  /// Targets with no tensor in the file are left as they are instead of being an error.
  bool allow_partial = false;
  /// File tensors with no target are ignored instead of being an error.
  bool allow_unexpected = false;
  /// Floating tensors are converted to the target's dtype (f16/bf16/f32/f64 in any direction);
  /// when false, a dtype difference is an error. Other dtypes must always match.
  bool cast_floating = true;
  /// Each value is copied once. A tensor stored as it is (contiguous, uncompressed, not bool)
  /// whose target is a contiguous host tensor of the same dtype is read from the file straight
  /// into the target's memory (one positioned read, large enough for the disk to stream it).
  /// Others (casts, strided or compressed tensors, targets on a GPU) come from a mapping of the
  /// file when this is true (see ReadOptions), else from a read into memory.
  bool mmap = true;
};

/// What a load did: target names filled, and the names left out (when allowed).
struct LoadReport {
  std::vector<std::string> loaded;
  std::vector<std::string> missing;     // targets not in the file (allow_partial)
  std::vector<std::string> unexpected;  // file keys (renamed) with no target (allow_unexpected)
};

/// Missing, unexpected, mis-shaped or mis-typed keys, all listed in one message.
class LoadError : public StoreError {
 public:
  LoadError(const std::string& msg, LoadReport r, std::vector<std::string> mismatched)
      : StoreError(msg), report(std::move(r)), mismatched(std::move(mismatched)) {}
  LoadReport report;                    // missing and unexpected keys; nothing was loaded
  std::vector<std::string> mismatched;  // shape or dtype differences, one line each
};

/// Copies the file's tensors into `targets` (name -> existing tensor) in place, under a
/// NoGradGuard. Every key is checked before any tensor is written: on error nothing changes.
LoadReport load_into(const TensorMap& targets, const SafetensorsFile& file,
                     const LoadOptions& options = {});
/// The same from a PyTorch file's value (its tensors(), named with dotted keys).
LoadReport load_into(const TensorMap& targets, const PtValue& value,
                     const LoadOptions& options = {});
/// Opens `path` and loads it into `targets`: a safetensors file, or a PyTorch file (zip or
/// legacy, told apart by its first bytes), whose model_state() gives the tensors.
LoadReport load_into(const TensorMap& targets, const std::string& path,
                     const LoadOptions& options = {});
/// The same for several files taken as one (the shards of a checkpoint, any mix of formats):
/// a key in two of them is a FormatError; every file is opened and every key of all of them is
/// checked before anything is written, so an error in any file changes nothing.
LoadReport load_into(const TensorMap& targets, const std::vector<std::string>& paths,
                     const LoadOptions& options = {});

}  // namespace ember::store
