#include "auth/key_set.h"

namespace xb::auth {

const Key* SelectKey(const KeySet& set, const std::optional<std::string>& kid, Alg alg) {
  const Key* selected = nullptr;
  for (const Key& key : set.keys) {
    const bool matches = kid ? (key.kid && *key.kid == *kid) : key.alg == alg;
    if (!matches) {
      continue;
    }
    if (selected != nullptr) {
      return nullptr;  // several: never a second try
    }
    selected = &key;
  }
  if (selected == nullptr || selected->alg != alg) {
    return nullptr;
  }
  return selected;
}

}  // namespace xb::auth
