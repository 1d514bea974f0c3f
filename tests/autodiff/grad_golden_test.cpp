// Gradient goldens from PyTorch for realistic compositions (tests/data/grad/*.json, written by
// tests/gen/gen_grad.py): each model below is the twin of the generator's model of the same name,
// built with ember's public API on flex, cpu and flex with gradient checkpointing (autodiff
// layer on each); the loss, every gradient, the running buffers and (where stored) a
// Hessian-vector product must match PyTorch's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "golden.h"

namespace ember::test {
namespace {

namespace F = nn::functional;
using Vars = std::map<std::string, Tensor>;
using Model = std::function<Tensor(Vars&, const json&)>;

Tensor at(const Vars& v, const std::string& k) {
  auto it = v.find(k);
  return it == v.end() ? Tensor() : it->second;
}

Tensor act(const std::string& name, const Tensor& x) {
  if (name == "relu") return relu(x);
  if (name == "gelu") return gelu(x);
  if (name == "gelu_tanh") return gelu(x, "tanh");
  if (name == "tanh") return tanh(x);
  throw std::runtime_error("unknown activation " + name);
}

Tensor mlp(Vars& v, const json& a) {
  Tensor h = act(a["act1"].get<std::string>(), linear(v["x"], v["w1"], v["b1"]));
  h = act(a["act2"].get<std::string>(), linear(h, v["w2"], v["b2"]));
  return F::cross_entropy(linear(h, v["w3"], v["b3"]), v["target"]);
}

Tensor convnet(Vars& v, const json& a) {
  Tensor h = F::conv2d(v["x"], v["c1w"], v["c1b"], {.stride = {1}, .padding = {1}});
  h = F::batch_norm(h, v["running_mean"], v["running_var"], v["bnw"], v["bnb"], true,
                    a["momentum"].get<double>(), 1e-5);
  h = F::max_pool2d(relu(h), {.kernel_size = {2}});
  const int64_t pad2 = a["pad2"].get<int64_t>();
  h = relu(F::conv2d(h, v["c2w"], v["c2b"], {.stride = {2}, .padding = {pad2}}));
  return F::cross_entropy(linear(h.flatten(1), v["fw"], v["fb"]), v["target"]);
}

Tensor attention(Vars& v, const json& a) {
  Tensor x = v["x"], mem = v.count("mem") ? v["mem"] : x;
  const int64_t b = x.size(0), l = x.size(1), e = x.size(2), s = mem.size(1);
  const int64_t h = a["heads"].get<int64_t>();
  auto heads = [&](const Tensor& t, int64_t n) {
    return t.reshape({b, n, h, e / h}).transpose(1, 2);
  };
  Tensor q = heads(linear(x, v["wq"], v["bq"]), l);
  Tensor k = heads(linear(mem, v["wk"], v["bk"]), s);
  Tensor val = heads(linear(mem, v["wv"], v["bv"]), s);
  F::AttentionOptions o{.attn_mask = at(v, "mask"), .is_causal = a["causal"].get<bool>()};
  if (a.contains("scale")) o.scale = a["scale"].get<double>();
  Tensor out = F::scaled_dot_product_attention(q, k, val, o);
  out = linear(out.transpose(1, 2).reshape({b, l, e}), v["wo"], v["bo"]);
  return F::mse_loss(out, v["target"]);
}

Tensor resblock(Vars& v, const json& a) {
  Shape ns = a["normalized_shape"].get<std::vector<int64_t>>();
  Tensor x = v["x"];
  Tensor h = F::layer_norm(x, ns, v["ln1w"], v["ln1b"], 1e-5);
  h = x + linear(act(a["act"].get<std::string>(), linear(h, v["w1"], v["b1"])), v["w2"], v["b2"]);
  return F::mse_loss(F::layer_norm(h, ns, v["ln2w"], v["ln2b"], 1e-5), v["target"]);
}

Tensor xent(Vars& v, const json& a) {
  Tensor logits = linear(v["x"], v["w"], v["b"]);
  if (a.value("kdim", false)) logits = logits.transpose(1, 2);
  Tensor loss = F::cross_entropy(logits, v["target"],
                                 {.weight = at(v, "cw"),
                                  .ignore_index = a["ignore_index"].get<int64_t>(),
                                  .reduction = a["reduction"].get<std::string>(),
                                  .label_smoothing = a["label_smoothing"].get<double>()});
  if (a["reduction"] == "none") loss = (loss * v["coef"]).sum();
  return loss;
}

Tensor mix_index(Vars& v, const json&) {
  Tensor x = v["x"];
  Tensor p = softmax(x * v["s"], 1);
  Tensor g = gather(p, 1, v["gidx"]);
  Tensor r = index_select(x, 0, v["ridx"]);
  Tensor c = cat({g, r.slice(0, 0, 4).slice(1, 0, 2) * 2.0, x.slice(1, 1, 2)}, 1);
  c = pad(c, {1, 2, 0, 1}, "constant", 0.5);
  Tensor lse = logsumexp(c, {1});
  Tensor cs = cumsum(c * v["coef"], 1);
  return lse.sum() + cs.pow(2).mean() + (r.sum({0}) * v["s"]).sum();
}

Tensor mix_sort(Vars& v, const json& a) {
  Tensor x = v["x"] * v["w"];
  Tensor s = std::get<0>(sort(x, 1, /*descending=*/true));
  Tensor t = std::get<0>(topk(x, 3, 1));
  Tensor lo = std::get<0>(topk(x, 2, 0, /*largest=*/false));
  Tensor y = pad(s.unsqueeze(0), {2, 1}, a["pad_mode"].get<std::string>()).squeeze(0);
  return (y * v["coef"]).sum() + cumsum(t, 1).pow(2).sum() + tanh(lo).sum();
}

Tensor mix_embed(Vars& v, const json& a) {
  Tensor e = F::embedding(v["idx"], v["emb"], a["padding_idx"].get<int64_t>());
  Tensor h = tanh(linear(e, v["w"], v["b"]));
  h = softmax(h, -1) * logsumexp(h, {-1}, true);
  return (h.sum({1}) * v["coef"]).sum();
}

Tensor grad_penalty(Vars& v, const json& a) {
  Tensor x = v["x"];
  Tensor d = linear(tanh(linear(x, v["w1"], v["b1"])), v["w2"], v["b2"]);
  Tensor gx = x.grad(d.sum().backward({.create_graph = true}));
  Tensor pen = (norm(gx, 2, {1}) - 1).pow(2).mean();
  return d.mean() + a["lam"].get<double>() * pen;
}

Tensor unet(Vars& v, const json& a) {
  Tensor h1 = silu(F::group_norm(F::conv2d(v["x"], v["w1"], v["b1"], {.padding = {1}}), 2,
                                 v["gnw"], v["gnb"]));
  Tensor h2 = F::avg_pool2d(h1, {.kernel_size = {2}});
  h2 = silu(F::conv2d(h2, v["w2"], v["b2"], {.padding = {2}, .dilation = {2}, .groups = 2}));
  Tensor u = F::interpolate(h2, {.scale_factor = {2.0}, .mode = "bilinear",
                                 .align_corners = a["align_corners"].get<bool>()});
  Tensor u2 = F::conv_transpose2d(h2, v["wt"], v["bt"],
                                  {.stride = {2}, .padding = {1}, .output_padding = {1}});
  Tensor c = cat({h1, u.slice(1, 0, 4), u2}, 1);
  Tensor out = F::conv2d(c, v["w3"], v["b3"]);
  Tensor loss = F::binary_cross_entropy_with_logits(out, v["target"], {}, "mean", v["pw"]);
  return loss + 0.1 * F::adaptive_avg_pool2d(h2, {3, 3}).pow(2).mean();
}

Tensor llama_block(Vars& v, const json& a) {
  Tensor x = F::embedding(v["idx"], v["emb"]);
  const int64_t b = x.size(0), l = x.size(1), e = x.size(2), h = a["heads"].get<int64_t>();
  auto heads = [&](const Tensor& t) { return t.reshape({b, l, h, e / h}).transpose(1, 2); };
  auto rms = [&](const Tensor& t, const char* g) { return F::rms_norm(t, {e}, v[g], 1e-6); };
  Tensor hn = rms(x, "g1");
  Tensor o = F::scaled_dot_product_attention(heads(linear(hn, v["wq"])), heads(linear(hn, v["wk"])),
                                             heads(linear(hn, v["wv"])), {.is_causal = true});
  x = x + linear(o.transpose(1, 2).reshape({b, l, e}), v["wo"]);
  hn = rms(x, "g2");
  x = x + linear(silu(linear(hn, v["wg"])) * linear(hn, v["wu"]), v["wd"]);
  Tensor logits = linear(rms(x, "g3"), v["emb"]);  // tied to the embedding
  return F::cross_entropy(logits.reshape({b * l, -1}), v["target"].reshape({-1}));
}

Tensor losses(Vars& v, const json&) {
  Tensor p = linear(v["x"], v["w"], v["b"]), t = v["t"];
  Tensor lp = log_softmax(p, 1);
  Tensor loss = F::smooth_l1_loss(p, t, "mean", 0.5) + 0.1 * F::huber_loss(p, t, "sum", 0.7);
  loss = loss + F::kl_div(lp, log_softmax(v["t2"], 1), "batchmean", true);
  loss = loss + F::kl_div(lp, softmax(v["t2"], 1), "sum");
  loss = loss + F::cosine_similarity(p, t, 1).mean() + F::l1_loss(p, t);
  loss = loss + F::nll_loss(lp, v["cls"], {.weight = v["cw"], .ignore_index = 1});
  loss = loss + F::binary_cross_entropy(sigmoid(p), v["t3"], v["bw"]);
  return loss + F::binary_cross_entropy_with_logits(p, v["t3"], {}, "sum") * 0.05;
}

Tensor mix_where(Vars& v, const json&) {
  Tensor x = v["x"], y = v["y"];
  Tensor z = masked_fill(clamp(where(x > y, x * y, x - y), -1.0, 1.5), v["mask"], 0.3);
  Tensor acts = softplus(x, 2.0) + elu(y) + leaky_relu(x, 0.1) + hardswish(y) + mish(x);
  Tensor loss = (z * v["coef"]).sum() + acts.mean() + amax(x * y, {1}).sum();
  loss = loss + std::get<0>(max(x, 0)).sum() + var(y, {1}).sum() + ember::std(x, {0}).sum();
  loss = loss + prod(y.slice(1, 0, 3) + 2, 1).sum() + norm(x - y) + x.abs().pow(1.5).mean();
  return loss + (sigmoid(y) * log1p(exp(x))).sum() / rsqrt(y.pow(2).sum() + 1);
}

Tensor mix_shape(Vars& v, const json&) {
  Tensor x = v["x"], y = v["y"], z = v["z"];
  Tensor e1 = einsum("bij,jk->bik", {x, y});
  Tensor e2 = bmm(x, y.expand({2, 4, 5}));
  Tensor c = matmul(x.transpose(1, 2), z);
  Tensor d = stack({e1, flip(e2, {2}), roll(e1, {1}, {1})}, 0);
  TensorList parts = chunk(d, 3, 0);
  Tensor e = cat({parts[2], parts[1], parts[0]}, 3);
  TensorList s = split(c, Shape{1, 3}, 2);
  TensorList u = unbind(s[1], 0);
  Tensor t = tril(matmul(u[0], u[1].t()), -1) + diagonal(c, 0, 1, 2).sum();
  Tensor r = narrow(movedim(repeat(x, {1, 2, 1}), {2}, {0}), 2, 1, 4);
  Tensor loss = e.pow(2).mean() + 0.1 * t.sum() + (r.tanh() * v["coef"]).sum() + s[0].exp().mean();
  return loss + sin(repeat_interleave(z, 2, 0)).sum() + cos(tile(z, {2, 1})).mean();
}

Tensor mix_scatter(Vars& v, const json&) {
  Tensor x = v["x"], src = v["src"], sidx = v["sidx"];
  Tensor loss = (scatter_add(x, 0, sidx, src) * v["c1"]).sum();
  loss = loss + index_add(x, 0, v["ridx"], src, 0.5).pow(2).sum();
  loss = loss + sin(index_put(x, {v["pr"], v["pc"]}, v["pv"], true)).sum();
  loss = loss + (scatter(x, 1, v["cidx"], v["csrc"]) * v["c1"]).sum();
  loss = loss + scatter_reduce(x, 0, sidx, src, "mean").pow(2).sum();
  loss = loss + scatter_reduce(x, 0, sidx, src, "amax").exp().sum();
  loss = loss + masked_select(x, v["mask"]).pow(2).sum() + take(x, v["tidx"]).sum();
  loss = loss + std::get<0>(kthvalue(x, 2, 1)).exp().sum();
  loss = loss + std::get<0>(median(x, 0)).pow(3).sum();
  return loss + std::get<0>(cummax(x, 1)).sum() + cumprod(x, 1).tanh().sum();
}

const std::map<std::string, Model>& models() {
  static const std::map<std::string, Model> m = {
      {"mlp", mlp},          {"convnet", convnet},     {"attention", attention},
      {"resblock", resblock}, {"xent", xent},          {"mix_index", mix_index},
      {"mix_sort", mix_sort}, {"mix_embed", mix_embed}, {"grad_penalty", grad_penalty},
      {"unet", unet},         {"llama_block", llama_block}, {"losses", losses},
      {"mix_where", mix_where}, {"mix_shape", mix_shape}, {"mix_scatter", mix_scatter}};
  return m;
}

struct GradCase {
  std::string file, name;
  json j;
};

const std::vector<GradCase>& grad_cases() {
  static const std::vector<GradCase> cases = [] {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(EMBER_TEST_DATA "/grad"))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<GradCase> cs;
    for (const auto& f : files) {
      std::ifstream in(f);
      json doc = json::parse(in);
      for (json& c : doc.at("cases"))
        cs.push_back({f.filename().string(), c.at("name").get<std::string>(), std::move(c)});
    }
    return cs;
  }();
  return cases;
}

// Floating tensors are stored in float64 and cast to the case's dtype, as the generator does.
Tensor load(const json& spec, DType dt, Device dev) {
  Tensor t = make_tensor(spec, dev);
  return is_floating(t.dtype()) ? t.to(dt) : t;
}

enum class Where { Flex, Cpu, Checkpointing };
const char* where_name(Where w) {
  return w == Where::Flex ? "flex" : w == Where::Cpu ? "cpu" : "flex_ckpt";
}
Device device_for(Where w) {
  if (w == Where::Cpu) return Device::cpu().autodiff();
  if (w == Where::Checkpointing) return Device::flex().gradient_checkpointing();
  return Device::flex().autodiff();
}

struct Param {
  size_t index;
  Where where;
};
void PrintTo(const Param& p, std::ostream* os) {
  *os << grad_cases()[p.index].name << " on " << where_name(p.where);
}

class GradGolden : public ::testing::TestWithParam<Param> {};

TEST_P(GradGolden, MatchesPyTorch) {
  const GradCase& gc = grad_cases()[GetParam().index];
  const json& c = gc.j;
  SCOPED_TRACE(gc.file + ": " + gc.name);
  Device dev = device_for(GetParam().where);
  DType dt = dtype_from_name(c.at("dtype").get<std::string>());
  const double rtol = c.at("rtol"), atol = c.at("atol");
  auto model = models().find(c.at("model").get<std::string>());
  ASSERT_NE(model, models().end()) << "no ember twin for model " << c.at("model");

  Vars v;
  for (const auto& [k, spec] : c.at("tensors").items()) v[k] = load(spec, dt, dev);
  std::vector<std::string> params = c.at("params").get<std::vector<std::string>>();
  for (const std::string& p : params) v.at(p).requires_grad_();

  Tensor loss = model->second(v, c.at("attrs"));
  EXPECT_EQ(compare(loss.detach(), c.at("loss"), rtol, atol), "") << "loss";
  if (c.contains("buffers"))
    for (const auto& [k, want] : c["buffers"].items())
      EXPECT_EQ(compare(v.at(k), want, rtol, atol), "") << "buffer " << k << " after the step";

  const bool hvp = c.contains("hvp");
  Gradients g = loss.backward({.create_graph = hvp});
  for (const std::string& p : params) {
    Tensor gp = g.get(v.at(p));
    ASSERT_TRUE(gp.defined()) << "no gradient for " << p;
    EXPECT_EQ(gp.shape(), v.at(p).shape()) << p;
    EXPECT_EQ(compare(gp.detach(), c.at("grads").at(p), rtol, atol), "")
        << "d(loss)/d(" << p << ")";
  }
  if (!hvp) return;
  // Hessian-vector product: differentiate sum_p <d(loss)/dp, v_p> w.r.t. the parameters again.
  const json& h = c["hvp"];
  Tensor dot;
  for (const auto& [k, spec] : h.at("v").items()) {
    Tensor gk = g.get(v.at(k));
    ASSERT_TRUE(gk.requires_grad()) << "create_graph left d(loss)/d(" << k << ") without history";
    Tensor term = (gk * load(spec, dt, dev)).sum();
    dot = dot.defined() ? dot + term : term;
  }
  Gradients g2 = dot.backward();
  for (const auto& [k, want] : h.at("out").items()) {
    Tensor hk = g2.get(v.at(k));
    ASSERT_TRUE(hk.defined()) << "no Hessian-vector product for " << k;
    EXPECT_EQ(compare(hk, want, rtol, atol), "") << "(H v) for " << k;
  }
}

std::vector<Param> all_params() {
  std::vector<Param> ps;
  for (size_t i = 0; i < grad_cases().size(); ++i)
    for (Where w : {Where::Flex, Where::Cpu, Where::Checkpointing}) ps.push_back({i, w});
  return ps;
}

std::string param_name(const ::testing::TestParamInfo<Param>& i) {
  return grad_cases()[i.param.index].name + "_" + where_name(i.param.where);
}
INSTANTIATE_TEST_SUITE_P(Grad, GradGolden, ::testing::ValuesIn(all_params()), param_name);

TEST(GradGoldenCases, EveryModelHasCases) {
  std::set<std::string> seen;
  for (const GradCase& c : grad_cases()) seen.insert(c.j.at("model").get<std::string>());
  for (const auto& [name, fn] : models()) EXPECT_TRUE(seen.count(name)) << name << " has no case";
}

}  // namespace
}  // namespace ember::test
