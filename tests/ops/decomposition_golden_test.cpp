// The decompositions a device backend runs instead of the host fallback (cuda: every op with a
// decomposition and no kernel of its own, detail::serve_decompositions) against the PyTorch
// goldens, on the host: with flex's kernel of the op removed, flex runs the decomposition and
// its pieces run flex's kernels. Error cases must raise the same error kind naming the op.
#include <gtest/gtest.h>

#include <map>

#include "ember/backends/backend.h"
#include "golden.h"
#include "kernel_off.h"

namespace ember {
namespace {

using test::error_kind;
using test::KernelOff;

// Runs every golden case of `op` on flex through its decomposition; returns the cases run.
int check_cases(OpId op) {
  KernelOff off(op);
  int n = 0;
  for (const test::Case& c : test::all_cases()) {
    if (c.op != op_name(op)) continue;
    auto it = test::runners().find(c.op);
    if (it == test::runners().end()) continue;
    SCOPED_TRACE(c.file + ": " + c.name);
    ++n;
    if (!c.error.empty()) {
      try {
        it->second(c, Device::flex());
        ADD_FAILURE() << "expected " << c.error << ", nothing was thrown";
      } catch (const Error& e) {
        EXPECT_EQ(error_kind(e), c.error) << e.what();
        EXPECT_NE(std::string(e.what()).find("[" + c.op + "]"), std::string::npos) << e.what();
      }
      continue;
    }
    TensorList got = it->second(c, Device::flex());
    EXPECT_EQ(got.size(), c.outputs.size());
    for (size_t i = 0; i < got.size() && i < c.outputs.size(); ++i) {
      const test::json& w = c.outputs[i];
      if (w.is_null() || w.contains("stats")) continue;
      EXPECT_EQ(test::compare(got[i], w, c.rtol, c.atol), "") << "output " << i;
    }
  }
  return n;
}

// Decompositions written for device backends (cuda runs them): each must have golden cases.
const OpId kDeviceDecomposed[] = {OpId::masked_fill, OpId::masked_select, OpId::nonzero,
                                  OpId::tril,        OpId::triu,          OpId::cummax,
                                  OpId::cummin,      OpId::interpolate,   OpId::pad,
                                  OpId::group_norm};

// Every op with a decomposition and a host kernel (so with golden cases run on the host): what
// the cuda backend may run through the decomposition.
TEST(DeviceDecompositions, MatchGoldens) {
  detail::init();
  std::map<OpId, int> ran;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    if (!d.decompose || d.category == OpCategory::User) continue;
    if (!backend_for(Backend::Flex)->kernel(OpId(i)).fn) continue;
    SCOPED_TRACE(d.name);
    ran[OpId(i)] = check_cases(OpId(i));
  }
  for (OpId op : kDeviceDecomposed) EXPECT_GT(ran[op], 0) << op_name(op);
}

}  // namespace
}  // namespace ember
