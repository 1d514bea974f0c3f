// Sequential, ModuleList and ModuleDict.
#include "ember/nn/container.h"

namespace ember::nn {

Module& IndexedModules::operator[](int64_t i) const {
  int64_t n = int64_t(items_.size());
  if (i < -n || i >= n)
    detail::throw_index(
        type_name().c_str(),
        "index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " modules");
  return *items_[size_t(i < 0 ? i + n : i)];
}

void IndexedModules::clone_items_into(IndexedModules& c) const {
  for (const auto& m : items_) c.push_back(m->clone());
  c.train(is_training());
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& m : items_) y = m->forward(y);
  return y;
}

std::shared_ptr<Module> Sequential::clone() const {
  auto c = std::make_shared<Sequential>();
  clone_items_into(*c);
  return c;
}

std::shared_ptr<Module> ModuleList::clone() const {
  auto c = std::make_shared<ModuleList>();
  clone_items_into(*c);
  return c;
}

Module& ModuleDict::operator[](const std::string& key) const {
  Module* m = find_child(key);
  if (!m) detail::throw_index("ModuleDict", "no module under key \"" + key + "\"");
  return *m;
}

std::shared_ptr<Module> ModuleDict::clone() const {
  auto c = std::make_shared<ModuleDict>();
  for (const auto& k : keys_) c->insert(k, (*this)[k].clone());
  c->train(is_training());
  return c;
}

}  // namespace ember::nn
