// UTF-8 decoding and encoding, and Unicode case mapping as TensorFlow's string ops do it (with
// ICU): StringLower/StringUpper with encoding "utf-8", case-insensitive regex matching. The case
// mappings are generated from TensorFlow (make_unicode_case_tables.py); stateless functions,
// safe to call from any thread.
#ifndef CONFLUX_CORE_SRC_UTIL_UNICODE_H_
#define CONFLUX_CORE_SRC_UTIL_UNICODE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cfx::internal {

constexpr char32_t kReplacementCharacter = 0xFFFD;
constexpr char32_t kMaxCodePoint = 0x10FFFF;

// Decodes `text`; each ill-formed sequence becomes one U+FFFD per maximal subpart (the Unicode
// standard's recommended practice, ICU's). Returns false when `text` is not valid UTF-8 (then
// `out` still holds the decoded text with its replacements).
bool DecodeUtf8(std::string_view text, std::u32string* out);
// Appends `cp` (a code point, not a surrogate) as UTF-8.
void AppendUtf8(char32_t cp, std::string* out);

// `text` lower-cased (upper-cased) as ICU's root locale does it: full mappings (U+0130 ->
// "i\u0307", U+00DF -> "SS"), the final-sigma rule when lower-casing. As TensorFlow, which passes
// the string's c_str() to ICU, the text ends at its first NUL byte, and each ill-formed sequence
// becomes U+FFFD.
std::string Utf8ToLower(std::string_view text);
std::string Utf8ToUpper(std::string_view text);

// The one-code-point lower case of `cp` (itself when it has none or maps to several code points).
char32_t SimpleLowerCase(char32_t cp);

// Closes the code point ranges `ranges` (inclusive pairs, any order) under one-code-point lower-
// and upper-casing in both directions: every code point those mappings link to a member, however
// indirectly (U+212A KELVIN SIGN, 'k' and 'K'; U+03C2, U+03C3 and U+03A3), is added. What a
// case-insensitive character class matches. The result is sorted and merged.
void CloseUnderSimpleCase(std::vector<std::pair<char32_t, char32_t>>* ranges);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_UTIL_UNICODE_H_
