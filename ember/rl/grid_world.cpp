#include <algorithm>

#include "ember/error.h"
#include "ember/rl/envs.h"

namespace ember::rl {
namespace {

Space grid_obs_space(const GridWorldOptions& o) {
  if (o.width < 1 || o.height < 1)
    detail::throw_value("GridWorld", "expected width and height >= 1, found " +
                                         std::to_string(o.width) + "x" + std::to_string(o.height));
  const int64_t n = o.width * o.height;
  if (o.one_hot) return Box(0.f, 1.f, {n});
  return Discrete(n);
}

}  // namespace

GridWorld::GridWorld(GridWorldOptions o)
    : EnvBase(grid_obs_space(o), Discrete(4)), o_(std::move(o)),
      cells_(size_t(o_.width * o_.height), Free) {
  auto inside = [&](std::pair<int64_t, int64_t> rc, const char* what) {
    auto [r, col] = rc;
    if (r < 0 || r >= o_.height || col < 0 || col >= o_.width)
      detail::throw_value("GridWorld", std::string("expected ") + what + " inside the " +
                                           std::to_string(o_.height) + "x" +
                                           std::to_string(o_.width) + " grid, found (" +
                                           std::to_string(r) + ", " + std::to_string(col) + ")");
  };
  auto put = [&](std::pair<int64_t, int64_t> rc, Cell c, const char* what) {
    inside(rc, what);
    cells_[size_t(rc.first * o_.width + rc.second)] = c;
  };
  for (auto rc : o_.walls) put(rc, Wall, "a wall");
  for (auto rc : o_.pits) put(rc, Pit, "a pit");
  for (auto rc : o_.goals) put(rc, Goal, "a goal");
  inside(o_.start, "the start");
  if (at(o_.start.first, o_.start.second) != Free)
    detail::throw_value("GridWorld", "expected the start on a free cell, found a wall, goal or pit");
  if (!(o_.slip >= 0 && o_.slip <= 1))
    detail::throw_value("GridWorld", "expected slip in [0, 1], found " + std::to_string(o_.slip));
}

void GridWorld::observe() {
  const int64_t cell = row_ * o_.width + col_;
  if (o_.one_hot) {
    std::fill(obs_.begin(), obs_.end(), 0.f);
    obs_[size_t(cell)] = 1.f;
  } else {
    obs_[0] = float(cell);
  }
}

ResetResult GridWorld::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  row_ = o_.start.first, col_ = o_.start.second;
  observe();
  return {obs_, {}};
}

void GridWorld::set_state(std::span<const double> s) {
  if (s.size() != 2 || s[0] < 0 || s[0] >= double(o_.height) || s[1] < 0 ||
      s[1] >= double(o_.width))
    detail::throw_value("GridWorld.set_state", "expected (row, column) inside the grid");
  row_ = int64_t(s[0]), col_ = int64_t(s[1]);
  observe();
}

StepResult GridWorld::step(const Action& a) {
  act_space_.check(a, "GridWorld.step");
  int64_t dir = a.index();
  if (o_.slip > 0 && rng_.uniform() < o_.slip) dir = (dir + (rng_.uniform() < 0.5 ? 1 : 3)) % 4;
  static constexpr int64_t kDr[4] = {-1, 0, 1, 0}, kDc[4] = {0, 1, 0, -1};
  const int64_t r = row_ + kDr[dir], c = col_ + kDc[dir];
  if (r >= 0 && r < o_.height && c >= 0 && c < o_.width && at(r, c) != Wall) row_ = r, col_ = c;
  const Cell here = at(row_, col_);
  observe();
  const double reward = here == Goal ? o_.goal_reward : here == Pit ? o_.pit_reward : o_.step_reward;
  return {obs_, reward, here == Goal || here == Pit, false, {}};
}

}  // namespace ember::rl
