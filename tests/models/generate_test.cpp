// Generation options (sampling with a seed, top-k, top-p, stop tokens, streaming) and the
// tokenizers: GPT-2's BPE against the reference encoder (tests/gen/text_reference.py) on a text
// with contractions, numbers, runs of spaces, accents, CJK and emoji; SentencePiece against
// python3-sentencepiece.
#include "ember/models/generate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "ember/ember.h"
#include "ember/models/gpt2.h"
#include "ember/models/hf_folder.h"
#include "ember/models/tokenizer.h"
#include "ember/store/safetensors.h"

namespace ember {
namespace {

std::string folder(const char* name) {
  return std::string(EMBER_TEST_DATA) + "/text_models/" + name;
}
nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(models::read_text_file(path));
}

class Generation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model = models::GPT2LMHeadModel::from_pretrained(folder("gpt2")); }
  static void TearDownTestSuite() { model.reset(); }
  static std::shared_ptr<models::GPT2LMHeadModel> model;
  std::vector<int64_t> prompt = {5, 17, 42};
};
std::shared_ptr<models::GPT2LMHeadModel> Generation::model;

TEST_F(Generation, SamplingIsSeededAndShaped) {
  models::GenerationOptions o{
      .max_new_tokens = 20, .do_sample = true, .temperature = 1.5, .seed = 7};
  auto a = models::generate(*model, prompt, o), b = models::generate(*model, prompt, o);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 20u);
  o.seed = 8;
  EXPECT_NE(models::generate(*model, prompt, o), a);
  // top_k = 1 and a tiny top_p both leave only the best token: greedy.
  auto greedy = models::generate(*model, prompt, {.max_new_tokens = 20});
  o.top_k = 1;
  EXPECT_EQ(models::generate(*model, prompt, o), greedy);
  o.top_k = 0;
  o.top_p = 1e-9;
  EXPECT_EQ(models::generate(*model, prompt, o), greedy);
}

TEST_F(Generation, ChooseTokenKeepsTopKAndTopP) {
  std::vector<float> logits = {0.f, 3.f, 2.9f, -1.f, 2.8f};
  uint64_t s = 1;
  models::GenerationOptions o{.do_sample = true, .top_k = 2};
  for (int i = 0; i < 200; ++i) {
    int64_t t = models::choose_token(logits, o, s);
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
  o = {.do_sample = true, .top_p = 0.5};  // 1 and 2 hold ~0.36 each: both are needed
  std::set<int64_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(models::choose_token(logits, o, s));
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2}));
  EXPECT_EQ(models::choose_token(logits, {}, s), 1);
}

TEST_F(Generation, StopTokensAndStreaming) {
  auto greedy = models::generate(*model, prompt, {.max_new_tokens = 12});
  std::vector<int64_t> streamed;
  auto out = models::generate(
      *model, prompt,
      {.max_new_tokens = 12, .stop_tokens = {greedy[4]}, .on_token = [&](int64_t t) {
         streamed.push_back(t);
         return true;
       }});
  size_t first = std::find(greedy.begin(), greedy.end(), greedy[4]) - greedy.begin();
  EXPECT_EQ(out, std::vector<int64_t>(greedy.begin(), greedy.begin() + first + 1));
  EXPECT_EQ(streamed, out);
  // A callback returning false ends generation after that token.
  out = models::generate(*model, prompt,
                         {.max_new_tokens = 12, .on_token = [](int64_t) { return false; }});
  EXPECT_EQ(out.size(), 1u);
  EXPECT_THROW(models::generate(*model, prompt, {.max_new_tokens = 64}), ValueError);
  EXPECT_THROW(models::generate(*model, {}, {}), ValueError);
  EXPECT_THROW(models::generate(*model, prompt, {.do_sample = true, .temperature = 0}), ValueError);
}

TEST(Gpt2Tokenizer, MatchesTheReferenceEncoder) {
  auto tok = models::GPT2Tokenizer::from_pretrained(folder("gpt2"));
  auto ref = read_json(folder("gpt2") + "/tokenizer.json");
  std::string text = ref["text"];
  EXPECT_EQ(models::GPT2Tokenizer::pre_tokenize(ref["pieces_text"].get<std::string>()),
            ref["pieces"].get<std::vector<std::string>>());
  EXPECT_EQ(tok->encode(text), ref["ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(tok->decode(tok->encode(text)), text);
  EXPECT_EQ(tok->vocab_size(), 297);
  // Bytes that are not UTF-8 round-trip too.
  std::string raw = "a\xff\xfe b\x80";
  EXPECT_EQ(tok->decode(tok->encode(raw)), raw);
  EXPECT_EQ(models::GPT2Tokenizer::pre_tokenize("it's  two\n\nlines "),
            (std::vector<std::string>{"it", "'s", " ", " two", "\n", "\n", "lines", " "}));
  EXPECT_THROW(tok->decode({100000}), IndexError);
  EXPECT_THROW(models::GPT2Tokenizer("{\"a\": 0}", ""), store::FormatError);  // bytes missing
}

TEST(SentencePiece, MatchesPythonSentencepiece) {
  if (!models::SentencePieceTokenizer::available())
    GTEST_SKIP() << "built without libsentencepiece";
  auto ref = read_json(folder("sp") + "/reference.json");
  auto tok = models::load_tokenizer(folder("sp"));
  EXPECT_EQ(tok->vocab_size(), ref["vocab_size"].get<int64_t>());
  auto ids = tok->encode(ref["text"].get<std::string>());
  EXPECT_EQ(ids, ref["ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(tok->decode(ids), ref["decoded"].get<std::string>());
  EXPECT_THROW(models::SentencePieceTokenizer(folder("gpt2") + "/vocab.json"), store::FormatError);
}

}  // namespace
}  // namespace ember
