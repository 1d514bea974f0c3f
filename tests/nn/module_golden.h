#pragma once
// Shared checks for module goldens (tests/data/modules/*.json, from tests/gen/gen_modules.py).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "ember/ember.h"
#include "golden.h"

namespace ember::test {

/// tests/data/modules/<name>.json
inline json load_module_golden(const std::string& name) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/" + name + ".json");
  return json::parse(f);
}

/// state_dict keys and shapes in PyTorch's order, and the printed summary, match the golden.
inline void expect_keys_and_summary(const nn::Module& m, const json& g) {
  auto sd = m.state_dict();
  ASSERT_EQ(sd.size(), g["state_dict"].size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(sd[i].first, g["state_dict"][i][0].get<std::string>());
    EXPECT_EQ(shape_str(sd[i].second.shape()),
              shape_str(g["state_dict"][i][1].get<std::vector<int64_t>>()));
  }
  EXPECT_EQ(m.repr(), g["repr"].get<std::string>());
}

/// The checks above, then loads the golden's parameter values into m.
inline void check_keys_and_load(nn::Module& m, const json& g) {
  expect_keys_and_summary(m, g);
  nn::StateDict values;
  for (const auto& kv : g["values"]) values.emplace_back(kv[0], make_tensor(kv[1], {}));
  m.load_state_dict(values);
}

}  // namespace ember::test
