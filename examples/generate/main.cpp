// Generates text with a Hugging Face-style decoder folder (GPT-2 or Llama-style: config.json,
// weights, and vocab.json + merges.txt or tokenizer.model), streaming tokens as they come:
//
//   generate MODEL_DIR --prompt "Once upon a time" --max-new 32 [--temperature 0.8 --top-k 40
//            --top-p 0.95 --seed 1] [--prompt-ids 1,2,3] [--device cpu|flex]
//
// Without --temperature / --top-k / --top-p decoding is greedy. A folder without a tokenizer
// takes --prompt-ids and prints ids.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "ember/ember.h"
#include "ember/models/generate.h"
#include "ember/models/tokenizer.h"
#include "ember/store/safetensors.h"

using namespace ember;

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "generate: " << why << "\n"
            << "usage: generate MODEL_DIR --prompt TEXT | --prompt-ids 1,2,3 [--max-new N]\n"
               "       [--temperature T] [--top-k K] [--top-p P] [--seed S] [--device cpu|flex]\n";
  std::exit(2);
}

std::vector<int64_t> parse_ids(const std::string& s) {
  std::vector<int64_t> ids;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) ids.push_back(std::stoll(item));
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("expected a model folder");
  std::string dir = argv[1], prompt, prompt_ids, device = "cpu";
  models::GenerationOptions o{.max_new_tokens = 32};
  try {
    for (int i = 2; i < argc; ++i) {
      std::string a = argv[i];
      if (i + 1 >= argc) usage("no value after " + a);
      std::string v = argv[++i];
      if (a == "--prompt")
        prompt = v;
      else if (a == "--prompt-ids")
        prompt_ids = v;
      else if (a == "--max-new")
        o.max_new_tokens = std::stoll(v);
      else if (a == "--temperature")
        o.temperature = std::stod(v), o.do_sample = true;
      else if (a == "--top-k")
        o.top_k = std::stoll(v), o.do_sample = true;
      else if (a == "--top-p")
        o.top_p = std::stod(v), o.do_sample = true;
      else if (a == "--seed")
        o.seed = std::stoull(v);
      else if (a == "--device")
        device = v;
      else
        usage("unknown option " + a);
    }
  } catch (const std::logic_error&) {
    usage("a number was expected");
  }
  try {
    set_default_device(device == "flex" ? Device::flex() : Device::cpu());
    auto model = models::causal_lm_from_pretrained(dir);
    std::shared_ptr<models::Tokenizer> tok;
    try {
      tok = models::load_tokenizer(dir);
    } catch (const store::IOError&) {
      if (prompt_ids.empty()) throw;
    }
    std::vector<int64_t> ids = prompt_ids.empty() ? tok->encode(prompt) : parse_ids(prompt_ids);
    if (tok) std::cout << tok->decode(ids);
    o.stop_tokens = models::eos_tokens(*model);
    // A token may end inside a character's UTF-8 bytes: the text is printed up to the last
    // whole character, the rest when the next tokens complete it.
    std::vector<int64_t> so_far;
    size_t printed = 0;
    o.on_token = [&](int64_t t) {
      if (!tok) {
        std::cout << t << " " << std::flush;
        return true;
      }
      so_far.push_back(t);
      std::string text = tok->decode(so_far);
      size_t end = text.size(), back = 0;
      while (back < 4 && back < end && (uint8_t(text[end - 1 - back]) & 0xC0) == 0x80) ++back;
      if (back < end) {
        auto lead = uint8_t(text[end - 1 - back]);
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (need > back + 1) end -= back + 1;  // an incomplete character: wait for it
      }
      if (end > printed) std::cout << text.substr(printed, end - printed) << std::flush;
      printed = std::max(printed, end);
      return true;
    };
    auto start = std::chrono::steady_clock::now();
    auto out = models::generate(*model, ids, o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tok) std::cout << tok->decode(so_far).substr(printed);  // what was held back
    std::cout << "\n";
    std::cerr << out.size() << " tokens in " << s << " s (" << out.size() / s << " tokens/s)\n";
  } catch (const std::exception& e) {
    std::cerr << "generate: " << e.what() << "\n";
    return 1;
  }
}
