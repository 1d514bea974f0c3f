#pragma once
// Tokenizers for the text models: GPT-2's byte-level BPE (vocab.json + merges.txt) and, when
// ember is built with Debian's libsentencepiece-dev, SentencePiece models (tokenizer.model).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember::models {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
};

/// GPT-2's byte-level BPE: the text is split by GPT-2's pattern (contractions, letters,
/// numbers, other symbols, whitespace; Unicode classes from ICU), each piece's UTF-8 bytes are
/// spelled with GPT-2's printable byte alphabet, and merges apply by rank. Any byte string
/// round-trips: decode(encode(s)) == s. Special tokens (by default "<|endoftext|>" when the
/// vocabulary has it) are matched literally before splitting.
class GPT2Tokenizer : public Tokenizer {
 public:
  /// From the texts of vocab.json and merges.txt; store::FormatError for a malformed file or a
  /// merge whose result is not in the vocabulary.
  GPT2Tokenizer(const std::string& vocab_json, const std::string& merges_txt);
  /// Reads dir/vocab.json and dir/merges.txt.
  static std::shared_ptr<GPT2Tokenizer> from_pretrained(const std::string& dir);
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  /// The id of a token spelled in the byte alphabet ("Ġthe"), or -1.
  int64_t token_to_id(const std::string& token) const;
  const std::string& id_to_token(int64_t id) const;
  /// The pieces GPT-2's pattern splits `text` into (before byte spelling and merges).
  static std::vector<std::string> pre_tokenize(std::string_view text);
  std::vector<std::string> special_tokens;

 private:
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> tokens_;             // id -> token
  std::unordered_map<std::string, int> ranks_;  // "a b" -> merge rank
};

/// A SentencePiece model (tokenizer.model of Llama-style folders). Throws NotImplementedError
/// when ember was built without libsentencepiece.
class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& model_path);
  ~SentencePieceTokenizer() override;
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override;
  /// Whether this build has SentencePiece.
  static bool available();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The tokenizer of a model folder: vocab.json + merges.txt (GPT-2) or tokenizer.model
/// (SentencePiece). store::IOError when it has neither.
std::shared_ptr<Tokenizer> load_tokenizer(const std::string& dir);

}  // namespace ember::models
