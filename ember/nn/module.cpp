// Module registry: names, recursion over children, state_dict loading and the printed summary.
#include "ember/nn/module.h"

#ifndef __EMSCRIPTEN__
#include <cxxabi.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <sstream>
#include <typeinfo>

#include "ember/autodiff.h"
#include "ember/error.h"

namespace ember::nn {

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError("[" + type_name() + "] forward(Tensor) is not defined for this module");
}

#ifdef __EMSCRIPTEN__
namespace {
// The last identifier of an Itanium-mangled class name ("N5ember2nn6LinearE" -> "Linear",
// "6CharLM" -> "CharLM", a local class "Z4mainE3Net" -> "Net"; a template's arguments are
// dropped): the WebAssembly build leaves out libc++abi's demangler (about 43 KB of code) for this
// one use.
std::string last_identifier(const char* raw) {
  const size_t n = std::strlen(raw);
  std::string last;
  for (size_t i = 0; i < n;) {
    if (raw[i] < '0' || raw[i] > '9') {
      if (raw[i] == 'I' && !last.empty()) break;  // template arguments follow the name
      ++i;
      continue;
    }
    size_t len = 0;
    while (i < n && raw[i] >= '0' && raw[i] <= '9') len = len * 10 + size_t(raw[i++] - '0');
    if (len > n - i) break;
    last.assign(raw + i, len);
    i += len;
  }
  return last.empty() ? std::string(raw) : last;
}
}  // namespace
#endif

std::string Module::type_name() const {
  const char* raw = typeid(*this).name();
#ifdef __EMSCRIPTEN__
  std::string name = last_identifier(raw);
#else
  int status = 0;
  char* dem = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  std::string name = status == 0 && dem ? dem : raw;
  std::free(dem);
#endif
  // Drop namespaces ("ember::nn::Linear" -> "Linear") but keep template arguments whole.
  size_t cut = name.find('<');
  size_t colon = name.rfind("::", cut == std::string::npos ? name.size() : cut);
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::shared_ptr<Module> Module::clone() const {
  throw NotImplementedError("[" + type_name() +
                            "] clone() is not defined for this module; use nn::clone(module)");
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    detail::throw_value("register",
                        "expected a non-empty name without '.', found \"" + name + "\"");
  auto taken = [&](const auto& v) {
    for (const auto& e : v)
      if (e.name == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    detail::throw_value("register",
                        "name \"" + name + "\" is already registered in " + type_name());
}

Tensor& Module::register_parameter(const std::string& name, Tensor& slot, bool requires_grad) {
  if (!slot.defined()) return slot;  // an absent bias: not a parameter, as in PyTorch
  check_new_name(name);
  slot = slot.detach();  // a parameter is a leaf even if built by recorded ops
  if (requires_grad) slot.requires_grad_();
  params_.push_back({name, &slot});
  return slot;
}

Tensor& Module::register_parameter(const std::string& name, Tensor&& value, bool requires_grad) {
  owned_tensors_.push_back(std::make_unique<Tensor>(std::move(value)));
  return register_parameter(name, *owned_tensors_.back(), requires_grad);
}

Tensor& Module::register_buffer(const std::string& name, Tensor& slot, bool persistent) {
  if (!slot.defined()) return slot;
  check_new_name(name);
  buffers_.push_back({name, &slot, persistent});
  return slot;
}

Tensor& Module::register_buffer(const std::string& name, Tensor&& value, bool persistent) {
  owned_tensors_.push_back(std::make_unique<Tensor>(std::move(value)));
  return register_buffer(name, *owned_tensors_.back(), persistent);
}

void Module::add_child(const std::string& name, Module* m, std::shared_ptr<Module> owned) {
  check_new_name(name);
  if (m == this) detail::throw_value("register", "a module cannot be its own child");
  children_.push_back({name, m, std::move(owned)});
}

void Module::register_modules(std::initializer_list<NamedModule> children) {
  for (const auto& c : children) add_child(c.name, c.module, nullptr);
}

Module* Module::find_child(const std::string& name) const {
  for (const auto& c : children_)
    if (c.name == name) return c.module;
  return nullptr;
}

void Module::unregister(const std::string& name) {
  for (auto* v : {&params_, &buffers_})
    for (auto it = v->begin(); it != v->end(); ++it)
      if (it->name == name) {
        v->erase(it);
        return;
      }
  detail::throw_value("unregister", type_name() + " has no parameter or buffer \"" + name + "\"");
}

namespace {
using ModuleList_ = std::vector<std::pair<std::string, Module*>>;
// Depth first from `m`. dedup: a module reachable by several paths is listed once (PyTorch's
// named_modules); otherwise once per path (state_dict keeps every key). A module that contains
// itself is an error rather than endless recursion.
void walk(const std::string& prefix, Module* m, bool dedup, std::vector<const Module*>& path,
          std::vector<const Module*>& seen, ModuleList_& out) {
  if (std::find(path.begin(), path.end(), m) != path.end())
    ember::detail::throw_value("named_modules", "module \"" + prefix + "\" contains itself");
  if (dedup) {
    if (std::find(seen.begin(), seen.end(), m) != seen.end()) return;
    seen.push_back(m);
  }
  out.emplace_back(prefix, m);
  path.push_back(m);
  for (auto& [name, c] : m->named_children())
    walk(prefix.empty() ? name : prefix + "." + name, c, dedup, path, seen, out);
  path.pop_back();
}
ModuleList_ modules_of(const Module* m, bool dedup) {
  std::vector<const Module*> path, seen;
  ModuleList_ out;
  walk("", const_cast<Module*>(m), dedup, path, seen, out);
  return out;
}
}  // namespace

void Module::collect(const std::string&, bool params, bool recurse, StateDict& out) const {
  // A tensor registered twice (tied weights, or a shared module) is listed once, as in PyTorch.
  auto add = [&](const std::string& key, const Tensor& t) {
    for (const auto& [k, e] : out)
      if (e.is_alias_of(t) && e.offset() == t.offset() && e.shape() == t.shape() &&
          e.strides() == t.strides())
        return;
    out.emplace_back(key, t);
  };
  if (!recurse) {
    for (const auto& s : params ? params_ : buffers_) add(s.name, *s.tensor);
    return;
  }
  for (auto& [prefix, m] : named_modules()) {
    std::string p = prefix.empty() ? "" : prefix + ".";
    for (const auto& s : params ? m->params_ : m->buffers_) add(p + s.name, *s.tensor);
  }
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  collect("", false, recurse, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& c : children_) out.emplace_back(c.name, c.module);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() const {
  return modules_of(this, true);
}

StateDict Module::state_dict() const {
  // PyTorch's order: each module's own parameters, then its own buffers, then its children.
  StateDict out;
  for (auto& [prefix, m] : modules_of(this, false)) {
    std::string p = prefix.empty() ? "" : prefix + ".";
    for (const auto& s : m->params_) out.emplace_back(p + s.name, s.tensor->detach());
    for (const auto& s : m->buffers_)
      if (s.persistent) out.emplace_back(p + s.name, s.tensor->detach());
  }
  return out;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : ", ") + e;
  return s;
}
}  // namespace

void Module::load_state_dict(const StateDict& sd, bool strict) {
  std::map<std::string, Tensor*> slots;
  for (auto& [prefix, m] : modules_of(this, false)) {
    std::string p = prefix.empty() ? "" : prefix + ".";
    for (const auto& s : m->params_) slots[p + s.name] = s.tensor;
    for (const auto& s : m->buffers_)
      if (s.persistent) slots[p + s.name] = s.tensor;
  }
  std::vector<std::string> unexpected, mis_shaped, missing;
  std::map<std::string, const Tensor*> given;
  for (const auto& [key, t] : sd) {
    if (!t.defined()) detail::throw_value("load_state_dict", "the tensor for " + key + " is undefined");
    given[key] = &t;
    auto it = slots.find(key);
    if (it == slots.end()) {
      unexpected.push_back(key);
    } else if (t.shape() != it->second->shape()) {
      mis_shaped.push_back(key + " (expected " + shape_str(it->second->shape()) + ", found " +
                           shape_str(t.shape()) + ")");
    }
  }
  for (const auto& [key, slot] : slots)
    if (!given.count(key)) missing.push_back(key);
  if (!strict) unexpected.clear(), missing.clear();
  if (!unexpected.empty() || !missing.empty() || !mis_shaped.empty()) {
    std::string msg = "state dict does not match " + type_name() + ":";
    if (!missing.empty()) msg += " missing keys: " + join(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected keys: " + join(unexpected) + ";";
    if (!mis_shaped.empty()) msg += " mis-shaped keys: " + join(mis_shaped) + ";";
    msg.pop_back();
    detail::throw_value("load_state_dict", msg);
  }
  NoGradGuard ng;  // writing into leaves that require grad is not a recorded op
  // Every value is converted before any slot is written: all or nothing.
  std::vector<std::pair<Tensor*, Tensor>> writes;
  for (const auto& [key, t] : sd) {
    auto it = slots.find(key);
    if (it == slots.end()) continue;  // unexpected, allowed by strict = false
    Tensor* slot = it->second;
    writes.emplace_back(slot, t.detach().to(slot->dtype()).to(slot->device().without_layers()));
  }
  for (auto& [slot, v] : writes) slot->copy_(v);
}

void Module::copy_state_from(const Module& src) {
  load_state_dict(src.state_dict());
  auto dst_mods = named_modules();
  auto src_mods = src.named_modules();
  for (size_t i = 0; i < dst_mods.size() && i < src_mods.size(); ++i)
    dst_mods[i].second->training_ = src_mods[i].second->training_;
}

Module& Module::to(Device d) {
  for (auto& [prefix, m] : named_modules()) {
    for (auto& s : m->params_) {
      bool rg = s.tensor->requires_grad();
      Tensor moved = s.tensor->detach().to(d);
      if (moved.is_alias_of(*s.tensor)) moved = moved.detach();
      *s.tensor = rg ? moved.requires_grad_() : moved;
    }
    for (auto& s : m->buffers_) *s.tensor = s.tensor->to(d);
  }
  return *this;
}

Module& Module::to(DType t) {
  for (auto& [prefix, m] : named_modules()) {
    for (auto& s : m->params_) {
      if (!is_floating(s.tensor->dtype())) continue;
      bool rg = s.tensor->requires_grad();
      Tensor cast = s.tensor->detach().to(t);
      *s.tensor = rg ? cast.requires_grad_() : cast;
    }
    for (auto& s : m->buffers_)
      if (is_floating(s.tensor->dtype())) *s.tensor = s.tensor->to(t);
  }
  return *this;
}

Module& Module::train(bool on) {
  for (auto& [prefix, m] : named_modules()) m->training_ = on;
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) detail::zero_grad_slot(p, set_to_none);
}

Module& Module::freeze() {
  for (auto& [prefix, m] : named_modules())
    for (auto& s : m->params_) s.tensor->requires_grad_(false);
  return *this;
}

Module& Module::unfreeze() {
  for (auto& [prefix, m] : named_modules())
    for (auto& s : m->params_) s.tensor->requires_grad_(true);
  return *this;
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (auto& [name, p] : named_parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

std::string Module::repr() const {
  // PyTorch's layout: "Name(extra)" for a leaf, otherwise one indented line per child.
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  if (!extra.empty()) lines.push_back(extra);
  for (const auto& c : children_) {
    std::string sub = c.module->repr();
    std::string indented;
    for (char ch : sub) indented += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
    lines.push_back("(" + c.name + "): " + indented);
  }
  std::string out = type_name() + "(";
  if (children_.empty() && lines.size() <= 1) return out + extra + ")";
  for (const auto& l : lines) out += "\n  " + l;
  return out + "\n)";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace ember::nn
