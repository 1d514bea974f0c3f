#pragma once
// ember::nn::Module — the base of every layer and model: registered parameters, buffers and
// submodules with PyTorch's dotted names ("features.0.weight", "bn.running_mean").
//
// Ownership: a module is an object with identity, like torch.nn.Module. It can be neither copied
// nor moved, so a layer held by value inside a model (`nn::Linear fc1{{.in = 4, .out = 2}};`)
// stays at one address and registration keeps a plain pointer to it (and to the Tensor members
// that hold its parameters). Containers (Sequential, ModuleList, ModuleDict) own the modules added
// to them through shared_ptr. A deep copy is explicit: `layer.clone()` for library layers and
// containers, `nn::clone(net)` for a default-constructible user module.
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::nn {

class Module;

/// One value for every spatial dim (`3`) or one per dim (`{3, 5}`).
struct Ints {
  Ints(int64_t v) : v({v}) {}                       // NOLINT: implicit by design
  Ints(std::initializer_list<int64_t> l) : v(l) {}  // NOLINT
  Ints(const Shape& s) : v(s) {}                    // NOLINT
  Shape v;
};

/// Options for new parameters: dtype and device (defaults: the default dtype and device).
struct ParamOptions {
  std::optional<DType> dtype = {};
  std::optional<Device> device = {};
};

/// Named tensors in registration order (parameters, then buffers, module by module).
using StateDict = std::vector<std::pair<std::string, Tensor>>;

/// A name and a module, for `register_modules({{"fc1", fc1}, {"fc2", fc2}})`.
struct NamedModule {
  NamedModule(std::string n, Module& m) : name(std::move(n)), module(&m) {}
  std::string name;
  Module* module;
};

/// `fc->weight`, `model->forward(x)`, `net->parameters()`: libtorch's modules are holders used
/// through `->`; an ember module is the object itself, so its `->` gives it back. Each layer
/// class declares its own (so `fc->weight` sees a Linear); a user module gets Module's.
#define EMBER_MODULE_ARROW(Type)                 \
  Type* operator->() { return this; }             \
  const Type* operator->() const { return this; }

class Module {
 public:
  EMBER_MODULE_ARROW(Module)
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The computation; layers override it (the default throws NotImplementedError).
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  /// The class name shown by the printed summary ("Linear", or a user type's unqualified name).
  virtual std::string type_name() const;
  /// The options shown inside the parentheses of the summary, e.g. "in_features=4, ...".
  virtual std::string extra_repr() const { return {}; }
  /// A deep copy with fresh parameter storage (library layers and containers; a user module
  /// without an override throws NotImplementedError: use nn::clone instead).
  virtual std::shared_ptr<Module> clone() const;

  /// Parameters with dotted names: own first, then each child's, in registration order.
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  /// This module (named "") and every descendant, depth first.
  std::vector<std::pair<std::string, Module*>> named_modules() const;
  /// Parameters and buffers with PyTorch's keys and order (detached, sharing storage).
  StateDict state_dict() const;
  /// Copies values in by key (casting dtype, keeping each tensor's device). Missing, unexpected
  /// and mis-shaped keys are reported together in one ValueError; with strict = false only
  /// mis-shaped keys are errors and the rest is left alone.
  void load_state_dict(const StateDict& sd, bool strict = true);

  /// Moves parameters to `d.autodiff()` (keeping requires_grad) and buffers to `d`.
  Module& to(Device d);
  /// Casts floating parameters and buffers to `t`.
  Module& to(DType t);
  /// Training mode for this module and all descendants (BatchNorm statistics, Dropout).
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  /// Clears the grad() slot of every parameter (set_to_none, libtorch's default), or fills it
  /// with zeros in place.
  void zero_grad(bool set_to_none = true);
  /// Stops (or restarts) gradients for every parameter.
  Module& freeze();
  Module& unfreeze();
  /// Number of parameter elements (only those that require grad when trainable_only).
  int64_t num_parameters(bool trainable_only = false) const;
  /// PyTorch-style multi-line summary.
  std::string repr() const;

  /// Copies every parameter and buffer value of `src` (same architecture) into this module.
  void copy_state_from(const Module& src);

 protected:
  /// Registers `slot` (a member of the derived class) as a parameter: it becomes a leaf that
  /// requires grad. An undefined tensor (e.g. no bias) is not registered, as in PyTorch.
  Tensor& register_parameter(const std::string& name, Tensor& slot, bool requires_grad = true);
  /// Registers a parameter this module owns (for modules without a named member).
  Tensor& register_parameter(const std::string& name, Tensor&& value, bool requires_grad = true);
  /// Registers a buffer: moved by to() like parameters but never trained. A non-persistent one
  /// (a table a module recomputes, torch's persistent=False) stays out of state_dict.
  Tensor& register_buffer(const std::string& name, Tensor& slot, bool persistent = true);
  Tensor& register_buffer(const std::string& name, Tensor&& value, bool persistent = true);
  /// Registers a child held by value (it must outlive this module, as members do).
  template <class M>
  M& register_module(const std::string& name, M& m) {
    add_child(name, &m, nullptr);
    return m;
  }
  /// Registers a child this module owns.
  template <class M>
  M& register_module(const std::string& name, std::shared_ptr<M> m) {
    M& ref = *m;
    add_child(name, &ref, std::move(m));
    return ref;
  }
  void register_modules(std::initializer_list<NamedModule> children);
  /// Finds a direct child by name (nullptr when absent).
  Module* find_child(const std::string& name) const;
  /// Drops the parameter or buffer registered as `name` (a layer that changes how it stores a
  /// weight, as quantization does); ValueError when there is none.
  void unregister(const std::string& name);

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
    bool persistent = true;  // in state_dict (parameters always are)
  };
  struct Child {
    std::string name;
    Module* module;
    std::shared_ptr<Module> owned;  // set for children a container owns
  };
  void add_child(const std::string& name, Module* m, std::shared_ptr<Module> owned);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, bool recurse, StateDict& out) const;

  std::vector<Slot> params_, buffers_;
  std::vector<Child> children_;
  std::vector<std::unique_ptr<Tensor>> owned_tensors_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

/// Deep copy of a default-constructible module type (a user model).
template <class M>
std::shared_ptr<M> clone(const M& m) {
  auto c = std::make_shared<M>();
  c->copy_state_from(m);
  return c;
}

}  // namespace ember::nn
