// RFC 9420 extension lists (`Extension extensions<V>`, §13.4), with the parse-phase rules of
// VALIDATION.md 4.1-4.2: no duplicated type in one list, the leaf-node type restrictions, and the
// known types' extension_data read as their structures.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "validate/tls_reader.h"

namespace xb::validate {

// Which structure a list belongs to; decides the types refused at parse time.
enum class ExtensionOwner {
  kLeafNode,  // refuses 2, 3, 4, 5, 10 and 0xf000 (VALIDATION.md 4.2)
  kOther,     // key package, group context, ReInit: any type parses
};

// Reads one extension list. Fails on truncation or a bad prefix, a duplicated extension type, a
// type `owner` refuses, or a known type whose extension_data does not parse as its structure.
// Bytes left over inside a known type's extension_data are accepted, as the reference accepts
// them, but mark the reader non_canonical() (VALIDATION.md 4.3 quirk). When `types` is not null,
// the types are appended in wire order.
Status ReadExtensions(TlsReader& reader, ExtensionOwner owner, std::vector<uint16_t>* types);

}  // namespace xb::validate
