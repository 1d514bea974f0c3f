// Kernel IR: canonical hashing, serialisation round trips and rejection of bad input, and the
// verifier.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "ember/error.h"
#include "ember/kl/expr.h"
#include "ember/kl/serialize.h"

namespace ember::kl {
namespace {

struct Variant {
  std::string kernel = "k", buf = "x", param = "alpha", value = "t";
  DType dtype = DType::F32;
  double constant = 2.0;
  bool swap = false;
  int lanes = 1;
  int64_t step = 1;
  Access out_access = Access::Write;
  bool extra_index = false;
};

// out[i] = (x[i] * alpha - 2) or (2 - x[i] * alpha), over a loop of the work range.
Kernel make(const Variant& v) {
  Builder kb(v.kernel);
  int x = kb.buffer(v.dtype, Access::Read, v.buf);
  int out = kb.buffer(v.dtype, v.out_access, "out");
  Expr alpha = kb.scalar(v.dtype, v.param);
  if (v.extra_index) kb.index("unused");
  for_range(kb.work_begin(), kb.work_end(), [&](Expr i) {
    Expr t = kb.load(x, i, v.lanes) * alpha;
    kb.name(t, v.value);
    Expr c = lit(t, v.constant);
    kb.store(out, i, v.swap ? c - t : t - c);
  }, v.step);
  return kb.finish();
}

TEST(KlIr, AlphaRenamedKernelsHashEqual) {
  Variant a, b;
  b.kernel = "other_name";
  b.buf = "input";
  b.param = "scale";
  b.value = "product";
  Kernel ka = make(a), kb = make(b);
  EXPECT_EQ(canonical_hash(ka), canonical_hash(kb));
  EXPECT_EQ(canonical_bytes(ka), canonical_bytes(kb));
  EXPECT_NE(serialize(ka), serialize(kb));  // the names travel in the serialised form
  EXPECT_EQ(canonical_hash(ka).hex().size(), 32u);
}

TEST(KlIr, AnyRealChangeChangesTheHash) {
  const Hash128 base = canonical_hash(make({}));
  std::vector<std::pair<std::string, Variant>> changes;
  Variant v;
  v.dtype = DType::F64; changes.push_back({"dtype", v}); v = {};
  v.constant = 2.5; changes.push_back({"constant", v}); v = {};
  v.constant = -0.0; changes.push_back({"constant -0", v}); v = {};
  v.swap = true; changes.push_back({"operand order", v}); v = {};
  v.lanes = 8; changes.push_back({"lanes", v}); v = {};
  v.step = 2; changes.push_back({"loop step", v}); v = {};
  v.out_access = Access::ReadWrite; changes.push_back({"buffer access", v}); v = {};
  v.extra_index = true; changes.push_back({"signature", v}); v = {};
  std::set<std::string> seen = {base.hex()};
  for (const auto& [what, var] : changes) {
    Hash128 h = canonical_hash(make(var));
    EXPECT_NE(h, base) << what;
    EXPECT_TRUE(seen.insert(h.hex()).second) << what << " collides with another change";
  }
}

TEST(KlIr, SerialisedFormRoundTripsExactly) {
  Variant v;
  v.lanes = 4;
  Kernel k = make(v);
  k.spec = "test spec";
  const std::string bytes = serialize(k);
  Kernel back = parse(bytes);
  EXPECT_EQ(serialize(back), bytes);
  EXPECT_EQ(to_text(back), to_text(k));
  EXPECT_EQ(back.name, k.name);
  EXPECT_EQ(back.spec, k.spec);
  EXPECT_EQ(back.value_names, k.value_names);
  EXPECT_EQ(back.body, k.body);
  EXPECT_EQ(canonical_hash(back), canonical_hash(k));
  EXPECT_EQ(bytes.substr(0, 4), "EMKL");
}

TEST(KlIr, ParseRejectsBadBytes) {
  const std::string good = serialize(make({}));
  auto rejects = [](const std::string& b) {
    try {
      parse(b);
    } catch (const ValueError& e) {
      return std::string(e.what()).rfind("[kl]", 0) == 0;
    }
    return false;
  };
  for (size_t n = 0; n < good.size(); ++n) EXPECT_TRUE(rejects(good.substr(0, n))) << "prefix of " << n;
  EXPECT_TRUE(rejects(good + "x")) << "trailing byte";
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_TRUE(rejects(bad)) << "magic";
  bad = good;
  bad[4] = char(kSchemaVersion + 1);
  EXPECT_TRUE(rejects(bad)) << "schema version";
  // The first instruction's op byte: the header is magic, version, flags, name.
  const size_t name_len = 1;  // "k"
  const size_t sig = 12 + 4 + name_len;
  bad = good;
  bad[sig + 3] = char(0x40);  // a buffer count far beyond the bytes left
  EXPECT_TRUE(rejects(bad)) << "buffer count";
  // Every single-byte corruption either parses into a kernel that verifies or throws ValueError.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string b = good;
    b[rng() % b.size()] = char(rng());
    try {
      Kernel k = parse(b);
      verify(k);
    } catch (const ValueError&) {
    }
  }
}

TEST(KlIr, VerifierNamesTheProblem) {
  Kernel k = make({});
  Kernel bad = k;
  std::swap(bad.body[0], bad.body[1]);  // an operand used before it is defined, or a bad type
  EXPECT_THROW(verify(bad), ValueError);
  bad = k;
  bad.body.pop_back();  // the loop is never closed
  try {
    verify(bad);
    ADD_FAILURE() << "accepted an open region";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("never closed"), std::string::npos) << e.what();
  }
  bad = k;
  for (Inst& in : bad.body)
    if (in.op == Op::Store) in.imm = 0;  // store to the read-only input
  EXPECT_THROW(verify(bad), ValueError);
}

TEST(KlIr, ScopesAreChecked) {
  Builder kb("scope");
  int out = kb.buffer(DType::I64, Access::Write);
  Expr leaked;
  for_range(Expr(0), Expr(4), [&](Expr i) { leaked = i * i; });
  EXPECT_THROW(kb.store(out, Expr(0), leaked), ValueError);
  // A Var carries it out.
  Var acc = kb.var({DType::I64, 1}, Expr(0));
  for_range(Expr(0), Expr(4), [&](Expr i) { acc.set(acc.get() + i); });
  kb.store(out, Expr(0), acc.get());
  Kernel k = kb.finish();
  EXPECT_NO_THROW(verify(k));
}

}  // namespace
}  // namespace ember::kl
