#pragma once
// Parsing JSON read from a file (private; includes nlohmann). nlohmann parses iteratively, but
// dump(), copies and comparisons recurse: a document nested 100,000 deep would overflow the
// stack in an error message. The depth is bounded while parsing, so no deep value ever exists.
#include <nlohmann/json.hpp>
#include <string_view>

namespace ember::detail {

/// `text` parsed (as J: nlohmann::json or ordered_json), or a discarded value (is_discarded())
/// when it is not valid JSON or nests objects and arrays more than `max_depth` levels deep.
template <class J = nlohmann::json>
J parse_json_bounded(std::string_view text, int max_depth) {
  struct TooDeep {};
  try {
    return J::parse(
        text,
        [&](int depth, typename J::parse_event_t ev, J&) {
          using E = typename J::parse_event_t;
          if ((ev == E::object_start || ev == E::array_start) && depth >= max_depth)
            throw TooDeep{};
          return true;
        },
        /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    return J(J::value_t::discarded);
  }
}

}  // namespace ember::detail
