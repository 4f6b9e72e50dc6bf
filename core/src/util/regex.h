// Regular expressions in RE2's syntax (TensorFlow's regex ops use RE2), matched by the standard
// library's std::wregex: the pattern is translated into an ECMAScript pattern over code points
// with the same meaning. Immutable once compiled; FullMatch may run on any number of threads.
//
// What is covered with RE2's meaning: literals and escapes (\a \f \n \r \t \v, \xHH, \x{H...},
// octal \0nn and \1nn.., escaped punctuation, \Q...\E), `.` (any code point but \n; any with
// (?s)), classes with ranges, negation, \d \s \w \D \S \W and POSIX [:name:] / [:^name:] (all
// ASCII-only, as in RE2), ^ $ \A \z \b \B, groups (...) (?:...) (?P<name>...), alternation, the
// repetitions * + ? {n} {n,} {n,m} (at most 1000, as in RE2) and their non-greedy forms, and
// flags (?i) (?s) (?m) at the start of the pattern. A '{' that starts no repetition is a literal,
// as in RE2. Text that is not valid UTF-8 matches nothing (RE2 matches no code point of it).
//
// What RE2 rejects is rejected (back-references, lookaround, \Z, \c, \u, repetitions over 1000):
// InvalidArgument "Invalid pattern: <pattern>, error: <why>", TensorFlow's message. What the
// translation does not cover is Unimplemented, naming the construct: Unicode classes \pN \p{Greek},
// \C, flags after the start of the pattern ((?i:...)), (?U), and \A \z under (?m).
//
// Deviations: case-insensitive matching folds with simple lower-casing (RE2 uses Unicode's case
// folding orbits, e.g. it also matches U+212A KELVIN SIGN with "k" — lower-casing does too, but
// not every orbit of three); ranges under (?i) fold with the C locale, i.e. ASCII only.
#ifndef CONFLUX_CORE_SRC_UTIL_REGEX_H_
#define CONFLUX_CORE_SRC_UTIL_REGEX_H_

#include <memory>
#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx::internal {

class FullMatchRegex {
 public:
  // Compiles `pattern` (RE2 syntax, UTF-8); errors as described above.
  static StatusOr<std::unique_ptr<FullMatchRegex>> Compile(const std::string& pattern);
  ~FullMatchRegex();
  FullMatchRegex(const FullMatchRegex&) = delete;
  FullMatchRegex& operator=(const FullMatchRegex&) = delete;

  // Whether all of `text` matches (RE2::FullMatch). ResourceExhausted when the standard
  // library gives up on the match (its complexity limits).
  StatusOr<bool> FullMatch(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  FullMatchRegex(std::string pattern, std::unique_ptr<Compiled> compiled);
  std::string pattern_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_UTIL_REGEX_H_
