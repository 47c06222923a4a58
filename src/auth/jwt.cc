#include "auth/jwt.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cmath>

#include "auth/base64url.h"
#include "auth/json.h"

namespace xb::auth {

namespace json = boost::json;

namespace {

// AUTH 5.4: a finite JSON number >= 0, rounded to the nearest second (halves up), clamped so
// later arithmetic cannot overflow.
Claim<int64_t> ReadNumericDate(const json::object& claims, std::string_view name) {
  Claim<int64_t> out;
  const json::value* v = claims.if_contains(name);
  if (v == nullptr) {
    return out;
  }
  out.state = Claim<int64_t>::State::kWrongType;
  if (const int64_t* i = v->if_int64()) {
    if (*i < 0) {
      return out;
    }
    out.value = std::min(*i, kMaxNumericDate);
  } else if (const uint64_t* u = v->if_uint64()) {
    out.value =
        *u > static_cast<uint64_t>(kMaxNumericDate) ? kMaxNumericDate : static_cast<int64_t>(*u);
  } else if (const double* d = v->if_double()) {
    if (!std::isfinite(*d) || *d < 0) {
      return out;
    }
    const double rounded = std::floor(*d + 0.5);
    out.value = rounded >= static_cast<double>(kMaxNumericDate) ? kMaxNumericDate
                                                                : static_cast<int64_t>(rounded);
  } else {
    return out;
  }
  out.state = Claim<int64_t>::State::kPresent;
  return out;
}

// `aud` and `scope`: a string or an array of strings (AUTH 5.4). `split` splits a string scope
// on spaces.
Claim<std::vector<std::string>> ReadStrings(const json::object& claims, std::string_view name,
                                            bool split) {
  Claim<std::vector<std::string>> out;
  const json::value* v = claims.if_contains(name);
  if (v == nullptr) {
    return out;
  }
  out.state = Claim<std::vector<std::string>>::State::kWrongType;
  if (const json::string* s = v->if_string()) {
    std::string_view text(s->data(), s->size());
    if (!split) {
      out.value.emplace_back(text);
    } else {
      while (!text.empty()) {
        const size_t space = text.find(' ');
        std::string_view piece = text.substr(0, space);
        if (!piece.empty()) {
          out.value.emplace_back(piece);
        }
        if (space == std::string_view::npos) {
          break;
        }
        text.remove_prefix(space + 1);
      }
    }
  } else if (const json::array* a = v->if_array()) {
    for (const json::value& element : *a) {
      const json::string* s = element.if_string();
      if (s == nullptr) {
        out.value.clear();
        return out;
      }
      out.value.emplace_back(s->data(), s->size());
    }
  } else {
    return out;
  }
  out.state = Claim<std::vector<std::string>>::State::kPresent;
  return out;
}

Claims ReadClaims(const json::object& object) {
  Claims claims;
  claims.exp = ReadNumericDate(object, "exp");
  claims.nbf = ReadNumericDate(object, "nbf");
  claims.aud = ReadStrings(object, "aud", /*split=*/false);
  claims.scope = ReadStrings(object, "scope", /*split=*/true);
  if (const json::value* iss = object.if_contains("iss")) {
    if (const json::string* s = iss->if_string()) {
      claims.iss.state = Claim<std::string>::State::kPresent;
      claims.iss.value.assign(s->data(), s->size());
    } else {
      claims.iss.state = Claim<std::string>::State::kWrongType;
    }
  }
  if (const json::value* sub = object.if_contains("sub")) {
    if (const json::string* s = sub->if_string()) {
      claims.sub.state = Claim<std::string>::State::kPresent;
      claims.sub.value.assign(s->data(), s->size());
    } else {
      claims.sub.state = Claim<std::string>::State::kWrongType;
    }
  }
  return claims;
}

JwtParse Refuse(Rejection rejection) { return JwtParse{.rejection = rejection, .jwt = {}}; }

}  // namespace

// implements: AUTH-008 (J2), AUTH-014 syntax rows (J1, J3, J4), AUTH-031 (claim types read)
JwtParse ParseJwt(std::string_view token) {
  // J1: exactly three segments.
  const size_t dot1 = token.find('.');
  if (dot1 == std::string_view::npos) {
    return Refuse(Rejection::kNotJwt);
  }
  const size_t dot2 = token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Refuse(Rejection::kNotJwt);
  }
  std::optional<std::string> header_json = DecodeBase64Url(token.substr(0, dot1));
  if (!header_json) {
    return Refuse(Rejection::kNotJwt);
  }
  std::optional<json::object> header = ParseJsonObject(*header_json);
  if (!header) {
    return Refuse(Rejection::kNotJwt);
  }
  const json::value* alg_value = header->if_contains("alg");
  const json::string* alg_name = alg_value != nullptr ? alg_value->if_string() : nullptr;
  if (alg_name == nullptr) {
    return Refuse(Rejection::kNotJwt);
  }
  // J2: one of the six.
  std::optional<Alg> alg = AlgFromName(std::string_view(alg_name->data(), alg_name->size()));
  if (!alg) {
    return Refuse(Rejection::kUnsupportedAlg);
  }
  // J3: kid, when present, a string of at most 256 bytes (a non-string kid is malformed too).
  JwtParse out;
  out.jwt.alg = *alg;
  if (const json::value* kid = header->if_contains("kid")) {
    const json::string* s = kid->if_string();
    if (s == nullptr || s->size() > kMaxKidBytes) {
      return Refuse(Rejection::kNotJwt);
    }
    out.jwt.kid.emplace(s->data(), s->size());
  }
  // J4: a claims object, a decodable signature.
  std::optional<std::string> claims_json = DecodeBase64Url(token.substr(dot1 + 1, dot2 - dot1 - 1));
  if (!claims_json) {
    return Refuse(Rejection::kNotJwt);
  }
  std::optional<json::object> claims = ParseJsonObject(*claims_json);
  if (!claims) {
    return Refuse(Rejection::kNotJwt);
  }
  std::optional<std::string> signature = DecodeBase64Url(token.substr(dot2 + 1));
  if (!signature) {
    return Refuse(Rejection::kNotJwt);
  }
  out.jwt.signing_input = token.substr(0, dot2);
  out.jwt.signature = std::move(*signature);
  out.jwt.claims = ReadClaims(*claims);
  return out;
}

}  // namespace xb::auth
