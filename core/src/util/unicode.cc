// UTF-8 and Unicode case mapping (see unicode.h); the tables are unicode_case_tables.inc.
#include "util/unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace cfx::internal {

// A named namespace rather than an anonymous one: in a unity build the table types must not meet
// another file's.
namespace unicode_tables {

struct CaseRun {
  char32_t first, last;
  int32_t stride, delta;
};
struct SpecialCase {
  char32_t cp;
  char32_t to[3];  // 0-terminated when shorter
};
struct CodeRange {
  char32_t first, last;
};

#include "util/unicode_case_tables.inc"

// The run of `runs` (sorted, disjoint) holding `cp`, or null.
template <size_t N>
const CaseRun* FindRun(const CaseRun (&runs)[N], char32_t cp) {
  const CaseRun* it = std::lower_bound(std::begin(runs), std::end(runs), cp,
                                       [](const CaseRun& r, char32_t c) { return r.last < c; });
  if (it == std::end(runs) || it->first > cp || (cp - it->first) % it->stride != 0) return nullptr;
  return it;
}

template <size_t N>
const SpecialCase* FindSpecial(const SpecialCase (&specials)[N], char32_t cp) {
  const SpecialCase* it =
      std::lower_bound(std::begin(specials), std::end(specials), cp,
                       [](const SpecialCase& s, char32_t c) { return s.cp < c; });
  return it != std::end(specials) && it->cp == cp ? it : nullptr;
}

template <size_t N>
bool InRanges(const CodeRange (&ranges)[N], char32_t cp) {
  const CodeRange* it = std::lower_bound(std::begin(ranges), std::end(ranges), cp,
                                         [](const CodeRange& r, char32_t c) { return r.last < c; });
  return it != std::end(ranges) && it->first <= cp;
}

// Appends the mapping of `cp` by (runs, specials) as UTF-8.
template <size_t R, size_t S>
void AppendMapped(const CaseRun (&runs)[R], const SpecialCase (&specials)[S], char32_t cp,
                  std::string* out) {
  if (const SpecialCase* s = FindSpecial(specials, cp)) {
    for (char32_t c : s->to)
      if (c != 0) AppendUtf8(c, out);
    return;
  }
  const CaseRun* run = FindRun(runs, cp);
  AppendUtf8(run != nullptr ? static_cast<char32_t>(static_cast<int64_t>(cp) + run->delta) : cp,
             out);
}

// Adds to `added` what the runs map members of `ranges` to, and what they map to members.
template <size_t N>
void AddCaseLinks(const CaseRun (&runs)[N], const std::vector<std::pair<char32_t, char32_t>>& ranges,
                  std::vector<std::pair<char32_t, char32_t>>* added) {
  for (const CaseRun& run : runs) {
    for (const auto& [low, high] : ranges) {
      // Sources in the range: their images.
      for (char32_t cp = std::max(low, run.first); cp <= std::min(high, run.last); ++cp)
        if ((cp - run.first) % run.stride == 0) {
          const char32_t image = static_cast<char32_t>(static_cast<int64_t>(cp) + run.delta);
          added->push_back({image, image});
        }
      // Images in the range: their sources.
      const int64_t first_image = static_cast<int64_t>(run.first) + run.delta;
      const int64_t last_image = static_cast<int64_t>(run.last) + run.delta;
      for (int64_t image = std::max<int64_t>(low, first_image);
           image <= std::min<int64_t>(high, last_image); ++image)
        if ((image - first_image) % run.stride == 0) {
          const char32_t source = static_cast<char32_t>(image - run.delta);
          added->push_back({source, source});
        }
    }
  }
}

}  // namespace unicode_tables

namespace {

using unicode_tables::InRanges;

constexpr char32_t kCapitalSigma = 0x3A3, kSmallSigma = 0x3C3, kFinalSigma = 0x3C2;

bool IsContinuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Unicode's Final_Sigma condition for the sigma at text[i]: a cased letter before it and none
// after it, case-ignorable code points skipped on both sides (a code point that is both counts as
// case-ignorable, as in ICU).
bool IsFinalSigma(const std::u32string& text, size_t i) {
  auto cased = [](char32_t c) { return InRanges(unicode_tables::kCased, c); };
  auto ignorable = [](char32_t c) { return InRanges(unicode_tables::kCaseIgnorable, c); };
  size_t before = i;
  while (before > 0 && ignorable(text[before - 1])) --before;
  if (before == 0 || !cased(text[before - 1])) return false;
  size_t after = i + 1;
  while (after < text.size() && ignorable(text[after])) ++after;
  return after == text.size() || !cased(text[after]);
}

// The text TensorFlow hands to ICU: up to the first NUL.
std::string_view UpToNul(std::string_view text) { return text.substr(0, text.find('\0')); }

}  // namespace

bool DecodeUtf8(std::string_view text, std::u32string* out) {
  out->clear();
  out->reserve(text.size());
  bool valid = true;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      out->push_back(b0);
      ++i;
      continue;
    }
    // The length of the sequence and the range its second byte must fall in (Unicode Table 3-7).
    int length = 0;
    unsigned char low = 0x80, high = 0xBF;
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2;
      cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3;
      cp = b0 & 0x0F;
      if (b0 == 0xE0) low = 0xA0;
      if (b0 == 0xED) high = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4;
      cp = b0 & 0x07;
      if (b0 == 0xF0) low = 0x90;
      if (b0 == 0xF4) high = 0x8F;  // nothing past U+10FFFF
    }
    size_t used = 1;
    bool ok = length > 0;
    for (int k = 1; ok && k < length; ++k) {
      if (i + used >= n) {
        ok = false;
        break;
      }
      const unsigned char b = static_cast<unsigned char>(text[i + used]);
      const bool in_range = k == 1 ? (b >= low && b <= high) : IsContinuation(b);
      if (!in_range) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (b & 0x3F);
      ++used;
    }
    if (ok) {
      out->push_back(cp);
    } else {
      // The maximal subpart (the bytes read so far) becomes one replacement character.
      out->push_back(kReplacementCharacter);
      valid = false;
    }
    i += used;
  }
  return valid;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Utf8ToLower(std::string_view text) {
  std::u32string cps;
  DecodeUtf8(UpToNul(text), &cps);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    if (cps[i] == kCapitalSigma) {
      AppendUtf8(IsFinalSigma(cps, i) ? kFinalSigma : kSmallSigma, &out);
      continue;
    }
    unicode_tables::AppendMapped(unicode_tables::kLowerRuns, unicode_tables::kLowerSpecial,
                                 cps[i], &out);
  }
  return out;
}

std::string Utf8ToUpper(std::string_view text) {
  std::u32string cps;
  DecodeUtf8(UpToNul(text), &cps);
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : cps)
    unicode_tables::AppendMapped(unicode_tables::kUpperRuns, unicode_tables::kUpperSpecial, cp,
                                 &out);
  return out;
}

void CloseUnderSimpleCase(std::vector<std::pair<char32_t, char32_t>>* ranges) {
  auto normalize = [](std::vector<std::pair<char32_t, char32_t>>* r) {
    std::sort(r->begin(), r->end());
    std::vector<std::pair<char32_t, char32_t>> merged;
    for (const auto& x : *r) {
      if (!merged.empty() && x.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, x.second);
      } else {
        merged.push_back(x);
      }
    }
    *r = std::move(merged);
  };
  normalize(ranges);
  // Each round follows one more link; orbits are a few code points long.
  while (true) {
    std::vector<std::pair<char32_t, char32_t>> closed = *ranges;
    unicode_tables::AddCaseLinks(unicode_tables::kLowerRuns, *ranges, &closed);
    unicode_tables::AddCaseLinks(unicode_tables::kUpperRuns, *ranges, &closed);
    normalize(&closed);
    if (closed == *ranges) return;
    *ranges = std::move(closed);
  }
}

char32_t SimpleLowerCase(char32_t cp) {
  if (unicode_tables::FindSpecial(unicode_tables::kLowerSpecial, cp) != nullptr) return cp;
  const unicode_tables::CaseRun* run = unicode_tables::FindRun(unicode_tables::kLowerRuns, cp);
  return run != nullptr ? static_cast<char32_t>(static_cast<int64_t>(cp) + run->delta) : cp;
}

}  // namespace cfx::internal
