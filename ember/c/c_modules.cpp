// The C ABI's state dicts (safetensors) and modules (ember/c/ember.h).
#include <string>

#include "ember/c/handles.h"
#include "ember/ember.h"
#include "ember/models/fashion_cnn.h"
#include "ember/optim/optimizers.h"
#include "ember/store/safetensors.h"

using namespace ember;
using c_api::guarded;
using c_api::need;
using c_api::put;

namespace {
#ifdef EMBER_NO_TRAINING
constexpr const char* kInferenceOnly =
    "not in this build: ember-infer is the inference-only module (no gradients, optimizers or "
    "writer); ember-st and ember-mt have them";
#endif

ember_state_dict* from_file(const store::SafetensorsFile& f) {
  // Materialised (no mapping kept): the handle owns its tensors, whatever happens to the file.
  auto sd = std::make_unique<ember_state_dict>();
  for (auto& [key, t] : f.load_all()) sd->items.emplace_back(key, t.contiguous());
  return sd.release();
}

const Tensor* find(const ember_state_dict& sd, const std::string& key) {
  for (const auto& [k, t] : sd.items)
    if (k == key) return &t;
  return nullptr;
}

// Where the module's parameters live (flex when it has none).
Device device_of(const nn::Module& m) {
  std::vector<Tensor> ps = m.parameters();
  return ps.empty() ? Device::flex() : ps.front().device();
}
}  // namespace

extern "C" {

// --- state dicts ---
ember_status ember_state_dict_load_file(const char* path, ember_state_dict** out) {
  return guarded("ember_state_dict_load_file", [&] {
    need(path, "path");
    need(out, "out");
    *out = from_file(store::SafetensorsFile(path, {.mmap = false}));
  });
}

ember_status ember_state_dict_load_bytes(const void* data, size_t size, ember_state_dict** out) {
  return guarded("ember_state_dict_load_bytes", [&] {
    if (size > 0) need(data, "data");
    need(out, "out");
    std::string bytes(static_cast<const char*>(data), size);
    *out = from_file(store::SafetensorsFile::from_bytes(std::move(bytes), "<memory>"));
  });
}

ember_status ember_state_dict_new(ember_state_dict** out) {
  return guarded("ember_state_dict_new", [&] { need(out, "out") = new ember_state_dict{}; });
}

ember_status ember_state_dict_size(const ember_state_dict* sd, size_t* out) {
  return guarded("ember_state_dict_size",
                 [&] { need(out, "out") = need(sd, "state_dict").items.size(); });
}

ember_status ember_state_dict_key(const ember_state_dict* sd, size_t i, const char** out) {
  return guarded("ember_state_dict_key", [&] {
    const auto& items = need(sd, "state_dict").items;
    need(out, "out");
    if (i >= items.size())
      throw IndexError("[state_dict_key] index " + std::to_string(i) + " out of range for " +
                       std::to_string(items.size()) + " keys");
    *out = items[i].first.c_str();
  });
}

ember_status ember_state_dict_get(const ember_state_dict* sd, const char* key,
                                  ember_tensor** out) {
  return guarded("ember_state_dict_get", [&] {
    const ember_state_dict& s = need(sd, "state_dict");
    need(key, "key");
    need(out, "out");
    const Tensor* t = find(s, key);
    if (!t) throw store::KeyError(std::string("[state_dict_get] no tensor named '") + key + "'");
    put(out, *t);
  });
}

ember_status ember_state_dict_set(ember_state_dict* sd, const char* key, const ember_tensor* t) {
  return guarded("ember_state_dict_set", [&] {
    ember_state_dict& s = need(sd, "state_dict");
    need(key, "key");
    const Tensor& v = need(t, "t").t;
    if (Tensor* slot = const_cast<Tensor*>(find(s, key))) *slot = v;
    else s.items.emplace_back(key, v);
  });
}

ember_status ember_state_dict_save_file(const ember_state_dict* sd, const char* path) {
  return guarded("ember_state_dict_save_file", [&] {
    const ember_state_dict& s = need(sd, "state_dict");
    need(path, "path");
#ifdef EMBER_NO_TRAINING
    (void)s;
    throw NotImplementedError(std::string("[save_file] ") + kInferenceOnly);
#else
    store::save_safetensors(path, s.items);
#endif
  });
}

void ember_state_dict_free(ember_state_dict* sd) { delete sd; }

// --- modules ---
ember_status ember_model_fashion_cnn(ember_module** out) {
  return guarded("ember_model_fashion_cnn", [&] {
    need(out, "out");
    DeviceGuard on(Device::flex());
    *out = new ember_module(std::make_shared<models::FashionCnn>());
  });
}

ember_status ember_model_mlp(const int64_t* sizes, int n, ember_module** out) {
  return guarded("ember_model_mlp", [&] {
    need(out, "out");
    if (n < 2) throw ValueError("[mlp] needs at least 2 sizes, found " + std::to_string(n));
    need(sizes, "sizes");
    for (int i = 0; i < n; ++i)
      if (sizes[i] < 1)
        throw ValueError("[mlp] sizes must be >= 1, found " + std::to_string(sizes[i]) +
                         " at " + std::to_string(i));
    DeviceGuard on(Device::flex());
    std::vector<std::shared_ptr<nn::Module>> layers;
    for (int i = 0; i + 1 < n; ++i) {
      if (i > 0) layers.push_back(std::make_shared<nn::ReLU>());
      layers.push_back(std::make_shared<nn::Linear>(nn::LinearOptions{.in = sizes[i], .out = sizes[i + 1]}));
    }
    *out = new ember_module(std::make_shared<nn::Sequential>(std::move(layers)));
  });
}

ember_status ember_module_load_state_dict(ember_module* m, const ember_state_dict* sd,
                                          int strict) {
  return guarded("ember_module_load_state_dict", [&] {
    nn::Module& mod = *need(m, "module").m;
    const ember_state_dict& s = need(sd, "state_dict");
    try {
      mod.load_state_dict(s.items, strict != 0);
    } catch (const ValueError& e) {  // keys that do not match: the C ABI's own status
      throw store::KeyError(e.what());
    }
  });
}

ember_status ember_module_state_dict(const ember_module* m, ember_state_dict** out) {
  return guarded("ember_module_state_dict", [&] {
    const nn::Module& mod = *need(m, "module").m;
    need(out, "out");
    *out = new ember_state_dict{mod.state_dict()};
  });
}

ember_status ember_module_to(ember_module* m, const ember_device* d) {
  return guarded("ember_module_to", [&] {
    ember_module& mod = need(m, "module");
    mod.m->to(need(d, "device").d);
    mod.opt.reset();  // its state refers to the old tensors
  });
}

ember_status ember_module_train(ember_module* m, int on) {
  return guarded("ember_module_train", [&] { need(m, "module").m->train(on != 0); });
}

ember_status ember_module_num_parameters(const ember_module* m, int64_t* out) {
  return guarded("ember_module_num_parameters",
                 [&] { need(out, "out") = need(m, "module").m->num_parameters(); });
}

ember_status ember_module_forward(ember_module* m, const ember_tensor* x, ember_tensor** out) {
  return guarded("ember_module_forward", [&] {
    nn::Module& mod = *need(m, "module").m;
    const Tensor& in = need(x, "x").t;
    need(out, "out");
    NoGradGuard no_grad;
    put(out, mod.forward(in));
  });
}

ember_status ember_module_repr(const ember_module* m, char** out) {
  return guarded("ember_module_repr",
                 [&] { need(out, "out") = c_api::dup_string(need(m, "module").m->repr()); });
}

ember_status ember_module_train_step_sgd(ember_module* m, const ember_tensor* x,
                                         const ember_tensor* labels, double lr, float* loss) {
  return guarded("ember_module_train_step_sgd", [&] {
    ember_module& mod = need(m, "module");
    const Tensor& in = need(x, "x").t;
    const Tensor& target = need(labels, "labels").t;
    need(loss, "loss");
    if (!(lr > 0)) throw ValueError("[train_step_sgd] lr must be > 0, found " + std::to_string(lr));
#ifdef EMBER_NO_TRAINING
    throw NotImplementedError(std::string("[train_step_sgd] ") + kInferenceOnly);
#else
    const Device d = device_of(*mod.m).autodiff();
    if (!mod.opt || mod.opt_lr != lr) {
      mod.opt = std::make_unique<optim::SGD>(mod.m->parameters(),
                                             optim::SGDOptions{.lr = lr, .momentum = 0.9});
      mod.opt_lr = lr;
    }
    mod.m->train();
    Tensor l = nn::functional::cross_entropy(mod.m->forward(in.to(d)), target.to(d));
    Gradients g = l.backward();
    mod.opt->step(g);
    *loss = l.item<float>();
#endif
  });
}

void ember_module_free(ember_module* m) { delete m; }

}  // extern "C"
