#include "validate/mls_message.h"

#include "validate/mls_proposal.h"
#include "validate/tls_reader.h"

namespace xb::validate {
namespace {

Result<ContentType> ReadContentType(TlsReader& r) {
  XB_ASSIGN_OR_RETURN(const uint8_t v, r.ReadUint8());
  if (v < static_cast<uint8_t>(ContentType::kApplication) ||
      v > static_cast<uint8_t>(ContentType::kCommit)) {
    return InvalidArgument("content type is unknown");
  }
  return static_cast<ContentType>(v);
}

// RFC 9420 §6.3 PrivateMessage: group_id<V>, uint64 epoch, uint8 content_type,
// authenticated_data<V>, encrypted_sender_data<V>, ciphertext<V> (VALIDATION.md 2.3).
Status ReadPrivateMessage(TlsReader& r, ParsedGroupMessage& out) {
  XB_ASSIGN_OR_RETURN(const std::string_view group_id, r.ReadOpaque());
  XB_ASSIGN_OR_RETURN(out.epoch, r.ReadUint64());
  XB_ASSIGN_OR_RETURN(out.content_type, ReadContentType(r));
  XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // authenticated_data
  XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // encrypted_sender_data
  XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // ciphertext
  out.group_id.assign(group_id);
  return Status::Ok();
}

// RFC 9420 §6.2 PublicMessage: FramedContent {group_id<V>, uint64 epoch, Sender,
// authenticated_data<V>, uint8 content_type, body}, signature<V>, a confirmation_tag<V> for a
// commit, and a membership_tag<V> for a member sender (VALIDATION.md 2.4).
Status ReadPublicMessage(TlsReader& r, ParsedGroupMessage& out) {
  XB_ASSIGN_OR_RETURN(const std::string_view group_id, r.ReadOpaque());
  XB_ASSIGN_OR_RETURN(out.epoch, r.ReadUint64());
  XB_ASSIGN_OR_RETURN(const uint8_t sender_type, r.ReadUint8());
  switch (sender_type) {
    case static_cast<uint8_t>(SenderType::kMember):    // uint32 leaf_index
    case static_cast<uint8_t>(SenderType::kExternal):  // uint32 sender_index
      XB_RETURN_IF_ERROR(r.ReadUint32().status());
      break;
    case static_cast<uint8_t>(SenderType::kNewMemberProposal):
    case static_cast<uint8_t>(SenderType::kNewMemberCommit):
      break;
    default:
      return InvalidArgument("sender type is unknown");
  }
  XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // authenticated_data
  XB_ASSIGN_OR_RETURN(out.content_type, ReadContentType(r));
  switch (out.content_type) {
    case ContentType::kApplication:
      XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // application_data
      break;
    case ContentType::kProposal:
      XB_RETURN_IF_ERROR(ReadProposal(r));
      break;
    case ContentType::kCommit:
      XB_RETURN_IF_ERROR(ReadCommit(r));
      break;
  }
  XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // signature
  if (out.content_type == ContentType::kCommit) {
    XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // confirmation_tag
  }
  if (sender_type == static_cast<uint8_t>(SenderType::kMember)) {
    XB_RETURN_IF_ERROR(r.ReadOpaque().status());  // membership_tag
  }
  out.group_id.assign(group_id);
  return Status::Ok();
}

}  // namespace

// implements: API-230 (group message: parsed as MLSMessage, trailing bytes accepted)
Result<ParsedGroupMessage> ParseGroupMessageData(std::string_view data) {
  TlsReader r(data);
  XB_ASSIGN_OR_RETURN(const uint16_t version, r.ReadUint16());
  XB_ASSIGN_OR_RETURN(const uint16_t wire_format, r.ReadUint16());
  // The reference checks the version after parsing the body; a bad version is malformed either
  // way, so checking first gives the same answer (VALIDATION.md 2.2). Likewise welcome,
  // group_info and key_package bodies are refused on the wire_format alone.
  if (version != kMlsVersion10) {
    return InvalidArgument("MLS protocol version is not mls10");
  }
  ParsedGroupMessage out;
  if (wire_format == static_cast<uint16_t>(WireFormat::kPrivateMessage)) {
    XB_RETURN_IF_ERROR(ReadPrivateMessage(r, out));
  } else if (wire_format == static_cast<uint16_t>(WireFormat::kPublicMessage)) {
    XB_RETURN_IF_ERROR(ReadPublicMessage(r, out));
  } else {
    return InvalidArgument("MLS wire format is not a public or private message");
  }
  out.wire_format = static_cast<WireFormat>(wire_format);
  out.message_bytes = r.position();
  return out;
}

}  // namespace xb::validate
