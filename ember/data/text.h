#pragma once
// Text datasets: one item per line of a text file, or per line of a JSON-lines file (one field of
// each object), and a tokenizer hook that turns either into int64 token-id tensors. Files are
// memory-mapped and their line offsets indexed when the dataset is made; items are cut out on
// get().
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/tensor.h"

namespace ember::data {

struct TextOptions {
  bool skip_empty = true;  // blank lines (only whitespace) are not items
  bool strip_cr = true;    // a trailing '\r' (CRLF files) is not part of the line
};

/// The lines of a UTF-8 text file (without their '\n'). Throws ValueError naming the file when it
/// cannot be read.
class LinesDataset final : public Dataset<std::string> {
 public:
  explicit LinesDataset(const std::string& path, const TextOptions& o = {});
  std::string get(int64_t i) const override;
  int64_t size() const override { return int64_t(spans_.size()); }
  /// The 1-based line number in the file of item `i`.
  int64_t line_of(int64_t i) const;

 private:
  std::shared_ptr<const void> hold_;  // the mapping (or a copy) that `text_` points into
  std::string_view text_;
  std::vector<std::pair<uint64_t, uint32_t>> spans_;  // offset, length
  std::vector<int64_t> lines_;
  std::string path_;
  friend class JsonLinesDataset;
};

struct JsonLinesOptions {
  /// The member of each object to return (strings as they are, other values as JSON text); empty:
  /// the whole line.
  std::string field = "text";
  TextOptions text = {};
};

/// One item per line of a JSON-lines file: the `field` of each object. A line that is not a JSON
/// object, or lacks the field, throws ValueError naming the file and line when it is read.
class JsonLinesDataset final : public Dataset<std::string> {
 public:
  explicit JsonLinesDataset(const std::string& path, const JsonLinesOptions& o = {});
  std::string get(int64_t i) const override;
  int64_t size() const override { return lines_.size(); }

 private:
  LinesDataset lines_;
  std::string field_;
};

/// Text to token ids (a BPE or SentencePiece model's encode, a character map, ...).
using Tokenizer = std::function<std::vector<int64_t>(const std::string&)>;

/// Each item of `texts` tokenized on get(): a 1-D int64 tensor of its ids. `tokenizer` must be
/// safe to call from several threads (the DataLoader's workers).
DatasetPtr<Tensor> tokenize(DatasetPtr<std::string> texts, Tokenizer tokenizer);

}  // namespace ember::data
