// SentencePiece models through Debian's libsentencepiece (built in when CMake finds it).
#include <string>

#include "ember/error.h"
#include "ember/models/tokenizer.h"
#include "ember/store/safetensors.h"

#if EMBER_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace ember::models {

#if EMBER_SENTENCEPIECE
struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path)
    : impl_(std::make_unique<Impl>()) {
  auto status = impl_->sp.Load(model_path);
  if (!status.ok())
    throw store::FormatError("[SentencePieceTokenizer] " + model_path + ": " + status.ToString());
}

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  auto status = impl_->sp.Encode(text, &ids);
  if (!status.ok()) detail::throw_value("SentencePieceTokenizer", status.ToString());
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int> v;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      detail::throw_index(
          "SentencePieceTokenizer",
          "token id " + std::to_string(id) + " outside [0, " + std::to_string(vocab_size()) + ")");
    v.push_back(static_cast<int>(id));
  }
  std::string out;
  auto status = impl_->sp.Decode(v, &out);
  if (!status.ok()) detail::throw_value("SentencePieceTokenizer", status.ToString());
  return out;
}

int64_t SentencePieceTokenizer::vocab_size() const { return impl_->sp.GetPieceSize(); }
bool SentencePieceTokenizer::available() { return true; }
#else
struct SentencePieceTokenizer::Impl {};
SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path) {
  detail::throw_not_implemented("SentencePieceTokenizer",
                                "ember was built without libsentencepiece (Debian "
                                "libsentencepiece-dev); cannot read " +
                                    model_path);
}
std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view) const { return {}; }
std::string SentencePieceTokenizer::decode(const std::vector<int64_t>&) const { return {}; }
int64_t SentencePieceTokenizer::vocab_size() const { return 0; }
bool SentencePieceTokenizer::available() { return false; }
#endif

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

}  // namespace ember::models
