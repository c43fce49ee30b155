// UTF-8 hygiene for text the operator writes into objects: a JSON dump (every API request)
// throws on invalid UTF-8, and a message cut by bytes can split a character. Pure.
#ifndef DDP_OPERATOR_API_UTF8_H_
#define DDP_OPERATOR_API_UTF8_H_

#include <cstddef>
#include <string>

namespace ddp::api {

// `s` with every invalid UTF-8 sequence (RFC 3629: overlongs, surrogates and truncated
// sequences included) replaced by U+FFFD. Identity on valid UTF-8, hence idempotent.
std::string SanitizeUtf8(const std::string& s);

// SanitizeUtf8(s) cut to at most `max_bytes` on a character boundary; a cut ends in "...",
// counted in max_bytes when max_bytes >= 3.
std::string TruncateUtf8(const std::string& s, size_t max_bytes);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_UTF8_H_
