// Text datasets: line indexing, JSON-lines fields, the tokenizer hook.
#include "ember/data/text.h"

#include "ember/data/transforms.h"
#include "ember/detail/file.h"
#include "ember/detail/json.h"
#include "ember/ops/creation.h"

namespace ember::data {
namespace {
constexpr uint64_t kMaxText = uint64_t(16) << 30;  // 16 GiB, as read_csv
}

LinesDataset::LinesDataset(const std::string& path, const TextOptions& o) : path_(path) {
  std::string error;
  const ember::detail::ReadFile file = ember::detail::ReadFile::open(path, error);
  if (!file) throw ValueError("[LinesDataset] '" + path + "': " + error);
  if (file.size() > kMaxText) throw ValueError("[LinesDataset] '" + path + "': larger than 16 GiB");
  if (file.size() > 0) {
    if (auto map = file.map(0, file.size(), error)) {
      text_ = std::string_view(map->data(), size_t(file.size()));
      hold_ = std::move(map);
    } else {  // a file system that cannot map: read it
      auto copy = std::make_shared<std::string>();
      if (!ember::detail::read_whole_file(path, kMaxText, *copy, error))
        throw ValueError("[LinesDataset] '" + path + "': " + error);
      text_ = *copy;
      hold_ = std::move(copy);
    }
  }
  const std::string_view t = text_;
  int64_t line = 0;
  for (size_t at = 0; at < t.size();) {
    size_t end = t.find('\n', at);
    if (end == std::string_view::npos) end = t.size();
    ++line;
    size_t len = end - at;
    if (o.strip_cr && len && t[at + len - 1] == '\r') --len;
    bool blank = true;
    for (size_t k = at; k < at + len && blank; ++k)
      blank = t[k] == ' ' || t[k] == '\t' || t[k] == '\r';
    if (!(o.skip_empty && blank)) {
      if (len > 0xffffffffu)
        throw ValueError("[LinesDataset] '" + path + "':" + std::to_string(line) +
                         ": a line of 4 GiB or more");
      spans_.emplace_back(at, uint32_t(len));
      lines_.push_back(line);
    }
    at = end + 1;
  }
}

std::string LinesDataset::get(int64_t i) const {
  detail::check_item_index("LinesDataset", i, size());
  const auto& [off, len] = spans_[size_t(i)];
  return std::string(text_.substr(size_t(off), len));
}

int64_t LinesDataset::line_of(int64_t i) const {
  detail::check_item_index("LinesDataset", i, size());
  return lines_[size_t(i)];
}

JsonLinesDataset::JsonLinesDataset(const std::string& path, const JsonLinesOptions& o)
    : lines_(path, o.text), field_(o.field) {}

std::string JsonLinesDataset::get(int64_t i) const {
  detail::check_item_index("JsonLinesDataset", i, size());
  const std::string line = lines_.get(i);
  if (field_.empty()) return line;
  auto where = [&] { return "'" + lines_.path_ + "':" + std::to_string(lines_.line_of(i)) + ": "; };
  const nlohmann::json j = ember::detail::parse_json_bounded(line, 64);
  if (j.is_discarded() || !j.is_object())
    throw ValueError("[JsonLinesDataset] " + where() + "expected a JSON object");
  auto it = j.find(field_);
  if (it == j.end())
    throw ValueError("[JsonLinesDataset] " + where() + "no field '" + field_ + "'");
  return it->is_string() ? it->get<std::string>() : it->dump();
}

DatasetPtr<Tensor> tokenize(DatasetPtr<std::string> texts, Tokenizer tokenizer) {
  if (!tokenizer) throw ValueError("[tokenize] expected a tokenizer function");
  return map(std::move(texts), [tok = std::move(tokenizer)](const std::string& s) {
    std::vector<int64_t> ids = tok(s);
    return tensor(ids, {int64_t(ids.size())}, DType::I64);
  });
}

}  // namespace ember::data
