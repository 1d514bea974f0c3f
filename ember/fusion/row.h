#pragma once
// A row group (private to ember/fusion): a reduction along some dims — sum, mean, amax, amin,
// or a normalisation that broadcasts its reduced values back over the row (softmax,
// log_softmax, layer_norm, rms_norm) — with the pointwise chain that makes its input fused in
// front of it as the kernel's prologue, so the chain's values never reach memory.
//
// A reduction of a whole large tensor to one value would be one row, one work item: it is split
// into `split` rows of partial results instead, combined by a second, tiny reduction.
#include <vector>

#include "ember/fusion/chain.h"
#include "ember/fusion/executor.h"
#include "ember/fusion/pointwise.h"
#include "ember/kl/templates/row_reduce.h"

namespace ember::fusion {

struct RowGroup {
  Chain chain;         // the prologue (may be empty)
  int32_t tail = -1;   // the reducing node
  Shape shape;         // the tail's input shape (the chain's shape)
  Operands ops;        // the prologue's memory operands first, then the tail's other inputs
  int32_t x_slot = -1; // operand of the tail's input when no chain value makes it
  int prologue_inputs = 0;
  bool broadcast_back = false;
  int64_t split = 1;   // > 1: rows of partial results (see above)
  std::vector<int32_t> side;    // prologue values it writes too (broadcast-back tails only)
  std::vector<int32_t> stores;  // the tail's output, then the side values (with an epilogue:
                                // the epilogue's stored values)
  std::vector<int32_t> epilogue;  // pointwise nodes after a sum/mean that read it broadcast back,
                                  // or the nll_loss node after a log_softmax (see build_row_loss)
  bool loss = false;   // per-row losses and weights, added up by `finish` (see build_row_loss)
  int32_t sibling = -1;  // a second reduction over the same rows (see build_row_sibling); its
                         // prologue's nodes are in `chain` too
  kl::RowLayout layout;
  kl::RowReduceKey key;
  Compiled code;
  kl::RowLayout finish_layout;  // loss groups: a second kernel over the per-row results
  kl::RowReduceKey finish_key;
  Compiled finish;
  /// Whether its kernels can run (see Compiled::ready).
  bool ready(bool wait) const { return code.ready(wait) && (!loss || finish.ready(wait)); }
};

/// Whether `n` can end a row group (its op, dtypes and attributes have a recipe).
bool row_tail(const Node& n);
/// Whether the row tail `n` writes full-shape outputs (softmax, the norms), not reduced ones.
bool row_broadcasts_back(const Node& n);
/// Builds the group (chain nodes, tail and shape filled in); false when the kernel cannot walk
/// the reduced dims (the tail then runs on its own).
bool build_row(RowGroup& g, const std::vector<Node>& nodes, const std::vector<Value>& values,
               const kl::Target& target);
/// The dims tail `n` reduces, over its input's rank, and the dtype it accumulates in.
Shape row_reduced_dims(const Node& n, int64_t rank);
DType row_acc(const Node& n);
/// Collects the prologue's operands and the tail's input (`x_slot` when no chain value makes
/// it); returns whether the chain makes it.
bool collect_prologue(RowGroup& g, const std::vector<Node>& nodes,
                      const std::vector<Value>& values);
/// Makes the pointwise group `p` (built, right after the row group `g`, over `g`'s shape) the
/// epilogue of `g`, whose tail is a sum or mean keeping its dims and whose value only `p`
/// reads: the kernel reduces each row, then broadcasts the result back over the row into `p`'s
/// body (a softmax or log_softmax backward: g - exp(y) * sum(g)), so neither the reduced value
/// nor a second pass over memory is needed. `before` (optional: a built pointwise group right
/// before `g`, which has no prologue of its own, making the tail's input) becomes the prologue,
/// and `p` may read its values too (they are computed again in the epilogue, never stored):
/// cross-entropy's backward, a one-hot select and log_softmax's backward, is one kernel. False
/// (and `g` unchanged) when it does not fit.
bool build_row_epilogue(RowGroup& g, const PointwiseGroup* before, const PointwiseGroup& p,
                        const std::vector<Node>& nodes, const std::vector<Value>& values,
                        const kl::Target& target);
/// Makes the nll_loss node `nll`, which reads the log_softmax of `g` (over the class dim), part
/// of `g`: cross-entropy's forward as one row kernel. Per row it reduces the online-softmax pair
/// (max, sum of exp), the logit of the target class and its weight (sums of select(class ==
/// target, ., 0): exact), and writes the row's loss and weight (reduction none: the loss straight
/// into the output); a target out of range fails the kernel's status word as nll_loss's own check
/// does. A second kernel, `finish`, adds the rows up (the loss for mean and sum, the weight
/// always) and divides for mean. With `keep` (the log-probabilities are held or read elsewhere:
/// the tape of a training step keeps them) the kernel writes them too, in the pass that writes
/// the loss; else they never reach memory. False (and `g` unchanged) when it does not fit.
bool build_row_loss(RowGroup& g, int32_t nll, bool keep, const std::vector<Node>& nodes,
                    const std::vector<Value>& values, const kl::Target& target);
/// Makes the row group `b` (the next step after `a`) part of `a`: two plain reductions (sum,
/// mean, amax, amin; not split) over the same shape and dims, `b` reading nothing `a` writes,
/// become one kernel with two combiners. False (and `a` unchanged) when they do not fit.
bool build_row_sibling(RowGroup& a, const RowGroup& b, const std::vector<Node>& nodes,
                       const std::vector<Value>& values, const kl::Target& target);
/// Whether `n` is a layer_norm_backward or rms_norm_backward that one row kernel can run.
bool norm_backward_node(const Node& n);
/// Builds the row kernel of the norm backward `g.tail` (see row_norm_backward.cpp; shape filled
/// in, no prologue): dx, and xhat when `want_xhat` (something reads or holds it). False when the
/// kernel cannot walk the feature dims as one row (the node then runs on its own).
bool build_row_norm_backward(RowGroup& g, bool want_xhat, const std::vector<Node>& nodes,
                             const std::vector<Value>& values, const kl::Target& target);
/// Runs a loss group's two kernels (see build_row_loss).
void launch_row_loss(const RowGroup& g, const std::vector<Node>& nodes,
                     const std::vector<Tensor>& vals, Executor& exec, Device place);
/// Runs the compiled group (`vals`: every stored value's tensor; the stores' are allocated).
/// Returns the number of kernels it launched.
int launch_row(const RowGroup& g, const std::vector<Node>& nodes, const std::vector<Tensor>& vals,
               Executor& exec, Device place);

}  // namespace ember::fusion
