// RE2 syntax on std::wregex (see regex.h): a one-pass translation of the pattern into ECMAScript
// over code points, then std::regex_match on the decoded text.
#include "util/regex.h"

#include <algorithm>
#include <regex>
#include <utility>
#include <vector>

#include "util/unicode.h"

namespace cfx::internal {

// Named, not anonymous: in a unity build these names must not meet another file's.
namespace re2_translation {

static_assert(sizeof(wchar_t) == 4, "std::wregex must hold a code point per character");

// std::regex_traits<wchar_t> with Unicode's simple lower-casing for (?i) (the standard traits
// fold with the C locale, ASCII only). The regex calls its traits' members by the traits type,
// so hiding the base's translate_nocase is enough.
struct Re2Traits : std::regex_traits<wchar_t> {
  wchar_t translate_nocase(wchar_t c) const {
    return static_cast<wchar_t>(SimpleLowerCase(static_cast<char32_t>(c)));
  }
};
using Regex = std::basic_regex<wchar_t, Re2Traits>;

using Range = std::pair<char32_t, char32_t>;
using Ranges = std::vector<Range>;

constexpr int kMaxRepeat = 1000;  // RE2's limit on {n,m}

bool IsAsciiDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiAlnum(char32_t c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsWordChar(char32_t c) { return IsAsciiAlnum(c) || c == '_'; }
int HexValue(char32_t c) {
  if (IsAsciiDigit(c)) return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// Sorted, merged ranges.
Ranges Normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const Range& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// Every code point not in `r`.
Ranges Complement(const Ranges& r) {
  Ranges out;
  char32_t next = 0;
  for (const Range& x : Normalize(r)) {
    if (x.first > next) out.push_back({next, x.first - 1});
    next = x.second + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

// RE2's Perl classes (ASCII-only): \d \s \w.
Ranges PerlClass(char32_t name) {
  switch (name) {
    case 'd':
      return {{'0', '9'}};
    case 's':
      return {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}};
    default:  // 'w'
      return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  }
}

// RE2's POSIX classes (ASCII-only); false for an unknown name.
bool PosixClass(const std::u32string& name, Ranges* out) {
  static const std::vector<std::pair<std::u32string, Ranges>> kClasses = {
      {U"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
      {U"alpha", {{'A', 'Z'}, {'a', 'z'}}},
      {U"ascii", {{0, 0x7F}}},
      {U"blank", {{'\t', '\t'}, {' ', ' '}}},
      {U"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
      {U"digit", {{'0', '9'}}},
      {U"graph", {{'!', '~'}}},
      {U"lower", {{'a', 'z'}}},
      {U"print", {{' ', '~'}}},
      {U"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
      {U"space", {{'\t', '\r'}, {' ', ' '}}},
      {U"upper", {{'A', 'Z'}}},
      {U"word", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}},
      {U"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
  };
  for (const auto& [n, r] : kClasses)
    if (n == name) {
      *out = r;
      return true;
    }
  return false;
}

// One code point as an ECMAScript literal, valid inside and outside brackets: ASCII letters and
// digits as themselves, other ASCII as \xHH (no metacharacter is left bare), the rest as itself.
void AppendLiteral(char32_t c, std::wstring* out) {
  if (IsAsciiAlnum(c) || c >= 0x80) {
    out->push_back(static_cast<wchar_t>(c));
    return;
  }
  static const char kHex[] = "0123456789abcdef";
  out->append(L"\\x");
  out->push_back(static_cast<wchar_t>(kHex[c >> 4]));
  out->push_back(static_cast<wchar_t>(kHex[c & 0xF]));
}

// A class of `ranges`; under (?i) (`fold`) with every case variant of its members, which is
// what RE2 matches (the standard library folds ranges with the C locale, ASCII only).
void AppendClass(const Ranges& ranges, bool negated, bool fold, std::wstring* out) {
  Ranges members = Normalize(ranges);
  if (fold) CloseUnderSimpleCase(&members);
  out->push_back(L'[');
  if (negated) out->push_back(L'^');
  for (const Range& r : members) {
    AppendLiteral(r.first, out);
    if (r.second != r.first) {
      out->push_back(L'-');
      AppendLiteral(r.second, out);
    }
  }
  out->push_back(L']');
}

// The translation of one pattern.
class Translator {
 public:
  Translator(const std::string& pattern, std::u32string p)
      : pattern_(pattern), p_(std::move(p)) {}

  Status Run(std::wstring* out, std::regex_constants::syntax_option_type* flags) {
    CFX_RETURN_IF_ERROR(LeadingFlags());
    while (pos_ < p_.size()) CFX_RETURN_IF_ERROR(Next(out));
    *flags = std::regex_constants::ECMAScript;
    if (icase_) *flags |= std::regex_constants::icase;
    if (multiline_) *flags |= std::regex_constants::multiline;
    return Status();
  }

 private:
  // What one escape denotes.
  struct Escape {
    enum Kind { kLiteral, kClass, kAssertion } kind = kLiteral;
    char32_t literal = 0;
    Ranges ranges;       // kClass
    std::wstring text;   // kAssertion: its ECMAScript form
  };

  Status Invalid(const std::string& why) const {
    return errors::InvalidArgument("Invalid pattern: ", pattern_, ", error: ", why);
  }
  Status Unsupported(const std::string& what) const {
    return errors::Unimplemented("pattern ", pattern_, ": ", what,
                                 " is not supported by Conflux's regex engine (std::regex with "
                                 "RE2's syntax translated)");
  }
  std::string Text(size_t from, size_t to) const {
    std::string s;
    for (size_t i = from; i < std::min(to, p_.size()); ++i) AppendUtf8(p_[i], &s);
    return s;
  }

  // (?flags) groups at the start of the pattern: i, m, s, U, and '-' to clear the ones after it.
  // (?U) swaps greedy and lazy repetition, which does not change whether a full match exists.
  Status LeadingFlags() {
    while (pos_ + 1 < p_.size() && p_[pos_] == '(' && p_[pos_ + 1] == '?') {
      size_t i = pos_ + 2;
      bool clear = false, flag_i = icase_, flag_m = multiline_, flag_s = dotall_;
      while (i < p_.size() && p_[i] != ')') {
        const char32_t c = p_[i];
        if (c == '-' && !clear) {
          clear = true;
        } else if (c == 'i') {
          flag_i = !clear;
        } else if (c == 'm') {
          flag_m = !clear;
        } else if (c == 's') {
          flag_s = !clear;
        } else if (c != 'U') {
          break;
        }
        ++i;
      }
      if (i >= p_.size()) return Invalid("invalid perl operator: " + Text(pos_, i));
      if (p_[i] != ')') return Status();  // (?:...), (?P<...>...) or an error: Next decides
      icase_ = flag_i;
      multiline_ = flag_m;
      dotall_ = flag_s;
      pos_ = i + 1;
    }
    return Status();
  }

  // Translates the next element of the pattern.
  Status Next(std::wstring* out) {
    const size_t start = pos_;
    const char32_t c = p_[pos_];
    switch (c) {
      case '\\': {
        if (pos_ + 1 < p_.size() && p_[pos_ + 1] == 'Q') return QuotedLiteral(out);
        Escape e;
        CFX_RETURN_IF_ERROR(ParseEscape(/*in_class=*/false, &e));
        if (e.kind == Escape::kLiteral) AppendCodePoint(e.literal, out);
        if (e.kind == Escape::kClass) AppendClass(e.ranges, false, icase_, out);
        if (e.kind == Escape::kAssertion) AppendAssertion(e.text, out);
        can_repeat_ = true;
        repeated_ = false;
        return Status();
      }
      case '[': {
        Ranges ranges;
        bool negated = false;
        CFX_RETURN_IF_ERROR(ParseClass(&ranges, &negated));
        AppendClass(ranges, negated, icase_, out);
        can_repeat_ = true;
        repeated_ = false;
        return Status();
      }
      case '.':
        ++pos_;
        AppendClass(dotall_ ? Ranges{{0, kMaxCodePoint}}
                            : Ranges{{0, '\n' - 1}, {'\n' + 1, kMaxCodePoint}},
                    false, false, out);
        can_repeat_ = true;
        repeated_ = false;
        return Status();
      case '(':
        return Group(out);
      case ')':
      case '|':
        ++pos_;
        out->push_back(static_cast<wchar_t>(c));
        can_repeat_ = c == ')';
        repeated_ = false;
        return Status();
      case '^':
      case '$':
        ++pos_;
        AppendAssertion(std::wstring(1, static_cast<wchar_t>(c)), out);
        can_repeat_ = true;
        repeated_ = false;
        return Status();
      case '*':
      case '+':
      case '?':
        ++pos_;
        if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // non-greedy
        return Repetition(start, out);
      case '{': {
        size_t end = 0;
        if (IsRepetition(pos_, &end)) {
          CFX_RETURN_IF_ERROR(CheckRepetitionSize(pos_, end));
          pos_ = end;
          if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;
          return Repetition(start, out);
        }
        break;  // a literal '{', as in RE2
      }
      default:
        break;
    }
    ++pos_;
    AppendCodePoint(c, out);
    can_repeat_ = true;
    repeated_ = false;
    return Status();
  }

  // A literal code point; under (?i) the class of its case variants when it has any (the
  // standard library folds with simple lower-casing only, which misses U+03C2 for U+03C3).
  void AppendCodePoint(char32_t c, std::wstring* out) const {
    if (icase_) {
      Ranges variants = {{c, c}};
      CloseUnderSimpleCase(&variants);
      if (variants.size() > 1 || variants[0].first != variants[0].second) {
        AppendClass(variants, false, false, out);
        return;
      }
    }
    AppendLiteral(c, out);
  }

  // An empty-width assertion, in a group: RE2 lets a repetition follow one (^*, \b{2}), which
  // ECMAScript allows after a group only.
  static void AppendAssertion(const std::wstring& assertion, std::wstring* out) {
    out->append(L"(?:");
    out->append(assertion);
    out->push_back(L')');
  }

  // A repetition operator p_[start, pos_): RE2 wants something to repeat, and no second operator
  // on the same element.
  Status Repetition(size_t start, std::wstring* out) {
    if (repeated_) return Invalid("bad repetition operator: " + Text(last_repeat_, pos_));
    if (!can_repeat_) return Invalid("no argument for repetition operator: " + Text(start, pos_));
    for (size_t i = start; i < pos_; ++i) out->push_back(static_cast<wchar_t>(p_[i]));
    repeated_ = true;
    last_repeat_ = start;
    return Status();
  }

  // Whether p_[at] starts {n}, {n,} or {n,m}; *end is just past its '}'.
  bool IsRepetition(size_t at, size_t* end) const {
    size_t i = at + 1;
    auto digits = [&] {
      const size_t from = i;
      while (i < p_.size() && IsAsciiDigit(p_[i])) ++i;
      return i > from;
    };
    if (!digits()) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      digits();
    }
    if (i >= p_.size() || p_[i] != '}') return false;
    *end = i + 1;
    return true;
  }

  Status CheckRepetitionSize(size_t at, size_t end) const {
    int64_t values[2] = {-1, -1};
    int which = 0;
    for (size_t i = at + 1; i + 1 < end; ++i) {
      if (p_[i] == ',') {
        which = 1;
        continue;
      }
      int64_t& v = values[which];
      v = std::min<int64_t>((v < 0 ? 0 : v) * 10 + (p_[i] - '0'), kMaxRepeat + 1);
    }
    const bool has_comma = which == 1;
    const int64_t low = values[0], high = has_comma ? values[1] : values[0];
    if (low > kMaxRepeat || high > kMaxRepeat || (high >= 0 && high < low))
      return Invalid("invalid repetition size: " + Text(at, end));
    return Status();
  }

  Status Group(std::wstring* out) {
    const size_t start = pos_;
    can_repeat_ = false;
    repeated_ = false;
    if (pos_ + 1 >= p_.size() || p_[pos_ + 1] != '?') {
      ++pos_;
      out->push_back(L'(');
      return Status();
    }
    const char32_t kind = pos_ + 2 < p_.size() ? p_[pos_ + 2] : 0;
    if (kind == ':') {
      pos_ += 3;
      out->append(L"(?:");
      return Status();
    }
    if (kind == 'P' && pos_ + 3 < p_.size() && p_[pos_ + 3] == '<') {
      size_t i = pos_ + 4;
      while (i < p_.size() && IsWordChar(p_[i])) ++i;
      if (i >= p_.size() || p_[i] != '>' || i == pos_ + 4)
        return Invalid("invalid named capture group: " + Text(start, i + 1));
      pos_ = i + 1;
      out->push_back(L'(');  // the name matters to RE2's submatches only
      return Status();
    }
    if (kind == 'i' || kind == 'm' || kind == 's' || kind == 'U' || kind == '-')
      return Unsupported("a flag group after the start of the pattern (" + Text(start, start + 4) +
                         "...)");
    return Invalid("invalid perl operator: " + Text(start, start + (kind == 'P' ? 4 : 3)));
  }

  // \Q...\E: every code point up to \E (or the end) is a literal.
  Status QuotedLiteral(std::wstring* out) {
    pos_ += 2;
    while (pos_ < p_.size()) {
      if (p_[pos_] == '\\' && pos_ + 1 < p_.size() && p_[pos_ + 1] == 'E') {
        pos_ += 2;
        break;
      }
      // One atom per code point: a repetition after \Q...\E applies to the last, as in RE2.
      AppendCodePoint(p_[pos_++], out);
      can_repeat_ = true;
      repeated_ = false;
    }
    return Status();
  }

  // An escape at p_[pos_] == '\\', in a class or not.
  Status ParseEscape(bool in_class, Escape* e) {
    const size_t start = pos_;
    if (pos_ + 1 >= p_.size()) return Invalid("trailing \\");
    const char32_t c = p_[pos_ + 1];
    pos_ += 2;
    auto bad = [&] { return Invalid("invalid escape sequence: " + Text(start, pos_)); };
    // Octal: \0 with up to two more digits, or \1..\7 followed by a second octal digit (a lone
    // \1..\9 would be a back-reference, which RE2 rejects).
    if ((c >= '1' && c <= '7' && pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '7') ||
        c == '0') {
      char32_t value = c - '0';
      for (int k = 0; k < 2 && pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '7'; ++k)
        value = value * 8 + (p_[pos_++] - '0');
      e->literal = value;
      return Status();
    }
    switch (c) {
      case 'x': {
        char32_t value = 0;
        if (pos_ < p_.size() && p_[pos_] == '{') {
          ++pos_;
          size_t digits = 0;
          while (pos_ < p_.size() && HexValue(p_[pos_]) >= 0) {
            value = std::min<char32_t>(value * 16 + HexValue(p_[pos_++]), kMaxCodePoint + 1);
            ++digits;
          }
          if (digits == 0 || value > kMaxCodePoint || pos_ >= p_.size() || p_[pos_] != '}')
            return bad();
          ++pos_;
        } else {
          for (int k = 0; k < 2; ++k) {
            if (pos_ >= p_.size() || HexValue(p_[pos_]) < 0) return bad();
            value = value * 16 + HexValue(p_[pos_++]);
          }
        }
        e->literal = value;
        return Status();
      }
      case 'a':
        e->literal = 0x07;
        return Status();
      case 'f':
        e->literal = '\f';
        return Status();
      case 'n':
        e->literal = '\n';
        return Status();
      case 'r':
        e->literal = '\r';
        return Status();
      case 't':
        e->literal = '\t';
        return Status();
      case 'v':
        e->literal = '\v';
        return Status();
      case 'd':
      case 's':
      case 'w':
        e->kind = Escape::kClass;
        e->ranges = PerlClass(c);
        return Status();
      case 'D':
      case 'S':
      case 'W':
        e->kind = Escape::kClass;
        e->ranges = Complement(PerlClass(c - 'A' + 'a'));
        return Status();
      case 'p':
      case 'P':
        return Unsupported("the Unicode class " + Text(start, pos_ + (pos_ < p_.size() ? 1 : 0)));
      case 'C':
        return Unsupported("\\C (any byte)");
      case 'b':
      case 'B':
      case 'A':
      case 'z':
        if (in_class) return bad();
        e->kind = Escape::kAssertion;
        if (c == 'b' || c == 'B') {
          // ECMAScript's \b uses the traits' \w: ASCII letters, digits and '_' in the C
          // locale, as RE2's.
          e->text = c == 'b' ? L"\\b" : L"\\B";
        } else if (c == 'z') {
          e->text = L"(?!";  // the end of the text: no code point follows
          AppendClass({{0, kMaxCodePoint}}, false, false, &e->text);
          e->text.push_back(L')');
        } else {
          if (multiline_) return Unsupported("\\A under (?m)");
          e->text = L"^";
        }
        return Status();
      default:
        // Punctuation (ASCII that is no letter or digit) stands for itself.
        if (c < 0x80 && !IsAsciiAlnum(c)) {
          e->literal = c;
          return Status();
        }
        return bad();
    }
  }

  // A class at p_[pos_] == '['.
  Status ParseClass(Ranges* ranges, bool* negated) {
    const size_t start = pos_;
    ++pos_;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      *negated = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return Invalid("missing ]: " + Text(start, p_.size()));
      const char32_t c = p_[pos_];
      if (c == ']' && !first) {
        ++pos_;
        return Status();
      }
      first = false;
      if (c == '[' && pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
        const size_t name_start = pos_ + 2;
        size_t close = name_start;
        while (close + 1 < p_.size() && !(p_[close] == ':' && p_[close + 1] == ']')) ++close;
        if (close + 1 < p_.size()) {
          std::u32string name = p_.substr(name_start, close - name_start);
          const bool complement = !name.empty() && name[0] == '^';
          if (complement) name.erase(0, 1);
          Ranges posix;
          if (!PosixClass(name, &posix))
            return Invalid("invalid character class range: " + Text(pos_, close + 2));
          if (complement) posix = Complement(posix);
          ranges->insert(ranges->end(), posix.begin(), posix.end());
          pos_ = close + 2;
          continue;
        }
      }
      const size_t item_start = pos_;
      char32_t low = 0;
      bool is_class = false;
      CFX_RETURN_IF_ERROR(ClassItem(ranges, &low, &is_class));
      if (is_class) continue;
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        char32_t high = 0;
        bool high_is_class = false;
        Ranges unused;
        CFX_RETURN_IF_ERROR(ClassItem(&unused, &high, &high_is_class));
        if (high_is_class || high < low)
          return Invalid("invalid character class range: " + Text(item_start, pos_));
        ranges->push_back({low, high});
      } else {
        ranges->push_back({low, low});
      }
    }
  }

  // One member of a class: a literal (*literal) or an escaped class (added to `ranges`).
  Status ClassItem(Ranges* ranges, char32_t* literal, bool* is_class) {
    if (p_[pos_] != '\\') {
      *literal = p_[pos_++];
      return Status();
    }
    Escape e;
    CFX_RETURN_IF_ERROR(ParseEscape(/*in_class=*/true, &e));
    if (e.kind == Escape::kClass) {
      ranges->insert(ranges->end(), e.ranges.begin(), e.ranges.end());
      *is_class = true;
    } else {
      *literal = e.literal;
    }
    return Status();
  }

  const std::string& pattern_;
  const std::u32string p_;
  size_t pos_ = 0;
  bool icase_ = false, multiline_ = false, dotall_ = false;
  bool can_repeat_ = false;  // the last element can take a repetition operator
  bool repeated_ = false;    // the last element already has one
  size_t last_repeat_ = 0;
};

}  // namespace re2_translation

struct FullMatchRegex::Compiled {
  re2_translation::Regex regex;
};

FullMatchRegex::FullMatchRegex(std::string pattern, std::unique_ptr<Compiled> compiled)
    : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}
FullMatchRegex::~FullMatchRegex() = default;

StatusOr<std::unique_ptr<FullMatchRegex>> FullMatchRegex::Compile(const std::string& pattern) {
  std::u32string code_points;
  if (!DecodeUtf8(pattern, &code_points))
    return errors::InvalidArgument("Invalid pattern: ", pattern, ", error: invalid UTF-8");
  std::wstring translated;
  std::regex_constants::syntax_option_type flags{};
  re2_translation::Translator translator(pattern, code_points);
  CFX_RETURN_IF_ERROR(translator.Run(&translated, &flags));
#if defined(__GLIBCXX__)
  // libstdc++'s breadth-first matcher: time polynomial in the text's length and a stack that
  // does not grow with it (its default depth-first one recurses once per character), which is
  // what RE2 promises. Possible because the translation never emits a back-reference.
  flags |= std::regex_constants::__polynomial;
#endif
  auto compiled = std::make_unique<Compiled>();
  try {
    compiled->regex.assign(translated, flags);
  } catch (const std::regex_error& e) {
    return errors::InvalidArgument("Invalid pattern: ", pattern, ", error: ", e.what());
  }
  return std::unique_ptr<FullMatchRegex>(new FullMatchRegex(pattern, std::move(compiled)));
}

StatusOr<bool> FullMatchRegex::FullMatch(std::string_view text) const {
  std::u32string code_points;
  // RE2 matches code points: no pattern matches a byte that is not part of one.
  if (!DecodeUtf8(text, &code_points)) return false;
  const std::wstring wide(code_points.begin(), code_points.end());
  try {
    return std::regex_match(wide, compiled_->regex);
  } catch (const std::regex_error& e) {
    return errors::ResourceExhausted("matching /", pattern_, "/ against a string of ",
                                     text.size(), " bytes: ", e.what());
  }
}

}  // namespace cfx::internal
