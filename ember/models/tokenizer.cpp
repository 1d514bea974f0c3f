// GPT-2's byte-level BPE: its split pattern written out as a scanner, the byte alphabet, and
// rank-ordered merges.
#include "ember/models/tokenizer.h"

#include <unicode/uchar.h>

#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ember/error.h"
#include "ember/models/hf_folder.h"
#include "ember/store/safetensors.h"

namespace ember::models {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes
// for code points from 256 on, so every byte has a visible, non-space spelling.
struct ByteAlphabet {
  std::string spelling[256];
  std::unordered_map<uint32_t, uint8_t> byte_of;
  ByteAlphabet() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      uint32_t cp = printable ? uint32_t(b) : uint32_t(256 + n++);
      byte_of[cp] = uint8_t(b);
      spelling[b] = utf8(cp);
    }
  }
  static std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
    return s;
  }
};
const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

// One decoded code point and where its bytes lie. Bytes that are not valid UTF-8 stand alone
// (as code point 0xFFFD's class: "other").
struct CodePoint {
  uint32_t cp;
  size_t begin, end;
};
std::vector<CodePoint> decode_utf8(std::string_view s) {
  std::vector<CodePoint> out;
  size_t i = 0;
  while (i < s.size()) {
    auto c = uint8_t(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      auto d = uint8_t(s[i + k]);
      ok = (d >> 6) == 2;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (!ok) {
      out.push_back({0xFFFD, i, i + 1});
      ++i;
    } else {
      out.push_back({cp, i, i + len});
      i += len;
    }
  }
  return out;
}

enum class Cls { kLetter, kNumber, kSpace, kOther };
// Python's str.isspace (what \s matches in GPT-2's pattern): Zs, Zl, Zp and the C0/C1 controls
// with a whitespace bidi class.
bool is_space(uint32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0) return true;
  if (c < 0x80) return false;
  auto t = u_charType(UChar32(c));
  return t == U_SPACE_SEPARATOR || t == U_LINE_SEPARATOR || t == U_PARAGRAPH_SEPARATOR;
}
Cls classify(uint32_t c) {
  if (is_space(c)) return Cls::kSpace;
  switch (u_charType(UChar32(c))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return Cls::kLetter;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return Cls::kNumber;
    default:
      return Cls::kOther;
  }
}

}  // namespace

// The pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ as a
// scanner: the alternatives are tried in order at each position, as the regex engine does.
std::vector<std::string> GPT2Tokenizer::pre_tokenize(std::string_view text) {
  std::vector<CodePoint> cps = decode_utf8(text);
  std::vector<Cls> cls(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) cls[i] = classify(cps[i].cp);
  std::vector<std::string> out;
  size_t n = cps.size(), i = 0;
  auto emit = [&](size_t a, size_t b) {
    out.emplace_back(text.substr(cps[a].begin, cps[b - 1].end - cps[a].begin));
    i = b;
  };
  auto run = [&](size_t j, Cls c) {
    while (j < n && cls[j] == c) ++j;
    return j;
  };
  while (i < n) {
    uint32_t c = cps[i].cp;
    if (c == '\'' && i + 1 < n) {  // contractions
      uint32_t a = cps[i + 1].cp, b = i + 2 < n ? cps[i + 2].cp : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(i, i + 2);
        continue;
      }
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        emit(i, i + 3);
        continue;
      }
    }
    // " ?X+" for the letter, number and other classes.
    size_t j = (c == ' ' && i + 1 < n && cls[i + 1] != Cls::kSpace) ? i + 1 : i;
    if (cls[j] != Cls::kSpace) {
      emit(i, run(j, cls[j]));
      continue;
    }
    // Whitespace: \s+(?!\S) leaves the last space of a run to the word after it.
    size_t k = run(i, Cls::kSpace);
    if (k == n || k - i == 1)
      emit(i, k);
    else
      emit(i, k - 1);
  }
  return out;
}

GPT2Tokenizer::GPT2Tokenizer(const std::string& vocab_json, const std::string& merges_txt) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(vocab_json);
  } catch (const nlohmann::json::exception& e) {
    throw store::FormatError(std::string("[GPT2Tokenizer] vocab.json: not JSON (") + e.what() +
                             ")");
  }
  if (!j.is_object()) throw store::FormatError("[GPT2Tokenizer] vocab.json: expected an object");
  for (const auto& [tok, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw store::FormatError("[GPT2Tokenizer] vocab.json: the id of \"" + tok +
                               "\" is not a non-negative integer");
    int64_t v = id.get<int64_t>();
    vocab_[tok] = v;
    if (v >= static_cast<int64_t>(tokens_.size())) tokens_.resize(v + 1);
    tokens_[v] = tok;
  }
  int rank = 0;
  size_t pos = 0, line_no = 0;
  while (pos < merges_txt.size()) {
    size_t eol = merges_txt.find('\n', pos);
    if (eol == std::string::npos) eol = merges_txt.size();
    std::string line = merges_txt.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string::npos)
      throw store::FormatError("[GPT2Tokenizer] merges.txt line " + std::to_string(line_no) +
                               ": expected two symbols separated by one space, found \"" + line +
                               "\"");
    if (!vocab_.count(line.substr(0, sp) + line.substr(sp + 1)))
      throw store::FormatError("[GPT2Tokenizer] merges.txt line " + std::to_string(line_no) +
                               ": the merge \"" + line + "\" makes a token not in vocab.json");
    ranks_.emplace(line, rank++);
  }
  const ByteAlphabet& a = alphabet();
  for (int b = 0; b < 256; ++b)
    if (!vocab_.count(a.spelling[b]))
      throw store::FormatError("[GPT2Tokenizer] vocab.json: byte " + std::to_string(b) + " (\"" +
                               a.spelling[b] + "\") has no token");
  if (vocab_.count("<|endoftext|>")) special_tokens.push_back("<|endoftext|>");
}

std::shared_ptr<GPT2Tokenizer> GPT2Tokenizer::from_pretrained(const std::string& dir) {
  std::filesystem::path d(dir);
  return std::make_shared<GPT2Tokenizer>(read_text_file((d / "vocab.json").string()),
                                         read_text_file((d / "merges.txt").string()));
}

int64_t GPT2Tokenizer::token_to_id(const std::string& token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string& GPT2Tokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(tokens_.size()))
    detail::throw_index("GPT2Tokenizer", "token id " + std::to_string(id) + " outside [0, " +
                                             std::to_string(tokens_.size()) + ")");
  return tokens_[id];
}

void GPT2Tokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  const ByteAlphabet& a = alphabet();
  std::vector<std::string> sym;
  for (unsigned char b : piece) sym.push_back(a.spelling[b]);
  while (sym.size() > 1) {
    int best = INT32_MAX;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = ranks_.find(sym[i] + " " + sym[i + 1]);
      if (it != ranks_.end() && it->second < best) best = it->second;
    }
    if (best == INT32_MAX) break;
    std::vector<std::string> merged;
    for (size_t i = 0; i < sym.size(); ++i) {
      if (i + 1 < sym.size()) {
        auto it = ranks_.find(sym[i] + " " + sym[i + 1]);
        if (it != ranks_.end() && it->second == best) {
          merged.push_back(sym[i] + sym[i + 1]);
          ++i;
          continue;
        }
      }
      merged.push_back(sym[i]);
    }
    sym.swap(merged);
  }
  for (const auto& s : sym) out.push_back(vocab_.at(s));
}

std::vector<int64_t> GPT2Tokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    // The earliest special token from here (the longest at one place).
    size_t at = std::string_view::npos, len = 0;
    for (const auto& s : special_tokens) {
      size_t f = text.find(s, pos);
      if (f != std::string_view::npos && (f < at || (f == at && s.size() > len))) {
        at = f;
        len = s.size();
      }
    }
    std::string_view chunk = text.substr(pos, at == std::string_view::npos ? at : at - pos);
    for (const auto& piece : pre_tokenize(chunk)) bpe(piece, out);
    if (at == std::string_view::npos) break;
    out.push_back(vocab_.at(std::string(text.substr(at, len))));
    pos = at + len;
  }
  return out;
}

std::string GPT2Tokenizer::decode(const std::vector<int64_t>& ids) const {
  const ByteAlphabet& a = alphabet();
  std::string out;
  for (int64_t id : ids) {
    const std::string& tok = id_to_token(id);
    for (const auto& cp : decode_utf8(tok)) {
      auto it = a.byte_of.find(cp.cp);
      if (it != a.byte_of.end())
        out += char(it->second);
      else
        out.append(tok, cp.begin, cp.end - cp.begin);  // an added token's own text
    }
  }
  return out;
}

std::shared_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  std::filesystem::path d(dir);
  if (std::filesystem::exists(d / "vocab.json") && std::filesystem::exists(d / "merges.txt"))
    return GPT2Tokenizer::from_pretrained(dir);
  if (std::filesystem::exists(d / "tokenizer.model"))
    return std::make_shared<SentencePieceTokenizer>((d / "tokenizer.model").string());
  throw store::IOError("[models] " + dir +
                       ": expected vocab.json + merges.txt or tokenizer.model, found neither");
}

}  // namespace ember::models
