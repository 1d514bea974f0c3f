#pragma once
// Containers that own their modules: Sequential (runs them in order), ModuleList and ModuleDict.
// Children are named "0", "1", ... (or by key), so state_dict keys match PyTorch's
// ("features.0.weight"). Passing layers to the constructor stores deep copies made by clone();
// push_back/insert of a shared_ptr stores that module itself.
#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/error.h"
#include "ember/nn/module.h"

namespace ember::nn {

/// Common code of the indexed containers.
class IndexedModules : public Module {
 public:
  EMBER_MODULE_ARROW(IndexedModules)
  /// Appends `m` (owned, shared with the caller) under the next index.
  template <class M>
  M& push_back(std::shared_ptr<M> m) {
    M& ref = *m;
    items_.push_back(m);
    register_module(std::to_string(items_.size() - 1), std::move(m));
    return ref;
  }
  /// Appends a deep copy of a library layer, e.g. push_back(nn::ReLU()).
  template <class M>
  requires std::derived_from<std::remove_cvref_t<M>, Module> Module& push_back(M&& m) {
    return push_back(m.clone());
  }
  size_t size() const { return items_.size(); }
  /// The module at `i` (negative counts from the end); IndexError when out of range.
  Module& operator[](int64_t i) const;
  /// The module at `i` as a `M` (ValueError when it is another type).
  template <class M>
  M& at(int64_t i) const {
    auto* m = dynamic_cast<M*>(&(*this)[i]);
    if (!m)
      detail::throw_value(type_name().c_str(),
                          "module " + std::to_string(i) + " is a " + (*this)[i].type_name());
    return *m;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 protected:
  void clone_items_into(IndexedModules& c) const;
  std::vector<std::shared_ptr<Module>> items_;
};

/// Runs its modules in order: forward(x) = m_n(...m_1(x)).
class Sequential : public IndexedModules {
 public:
  EMBER_MODULE_ARROW(Sequential)
  Sequential() = default;
  template <class... Ms>
  requires(sizeof...(Ms) > 0 && (std::derived_from<std::remove_cvref_t<Ms>, Module> &&
                                 ...)) explicit Sequential(Ms&&... ms) {
    (push_back(ms.clone()), ...);
  }
  explicit Sequential(std::vector<std::shared_ptr<Module>> ms) {
    for (auto& m : ms) push_back(std::move(m));
  }
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
};

/// A list of modules with no forward of its own.
class ModuleList : public IndexedModules {
 public:
  EMBER_MODULE_ARROW(ModuleList)
  ModuleList() = default;
  template <class... Ms>
  requires(sizeof...(Ms) > 0 && (std::derived_from<std::remove_cvref_t<Ms>, Module> &&
                                 ...)) explicit ModuleList(Ms&&... ms) {
    (push_back(ms.clone()), ...);
  }
  std::shared_ptr<Module> clone() const override;
};

/// Modules by name, in insertion order.
class ModuleDict : public Module {
 public:
  EMBER_MODULE_ARROW(ModuleDict)
  template <class M>
  M& insert(const std::string& key, std::shared_ptr<M> m) {
    M& ref = *m;
    register_module(key, std::move(m));
    keys_.push_back(key);
    return ref;
  }
  /// The module under `key`; IndexError when absent.
  Module& operator[](const std::string& key) const;
  bool contains(const std::string& key) const { return find_child(key) != nullptr; }
  const std::vector<std::string>& keys() const { return keys_; }
  size_t size() const { return keys_.size(); }
  std::shared_ptr<Module> clone() const override;

 private:
  std::vector<std::string> keys_;
};

}  // namespace ember::nn
