#include "frame_decoder.h"

#include <string_view>

namespace xb::bench {
namespace {

// Topic { bytes topic = 1; }
std::string_view TopicBytes(std::string_view topic_message, bool* ok) {
  WireReader r(topic_message);
  std::string_view topic;
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      topic = r.Bytes();
    } else {
      r.Skip(wt);
    }
  }
  *ok = *ok && r.ok();
  return topic;
}

// CatchupTarget { Topic topic = 1; uint64 through_sequence_id = 2; }
bool DecodeTarget(std::string_view bytes, TargetView* t) {
  WireReader r(bytes);
  bool ok = true;
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      t->topic = TopicBytes(r.Bytes(), &ok);
    } else if (f == 2 && wt == 0) {
      t->through_sequence_id = r.Varint();
    } else {
      r.Skip(wt);
    }
  }
  return ok && r.ok();
}

// EnvelopeMeta { Cursor cursor = 1; ... Topic topic = 4; }, Cursor { uint64 sequence_id = 1; }
bool DecodeMeta(std::string_view bytes, EnvelopeView* e) {
  WireReader r(bytes);
  bool ok = true;
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      WireReader c(r.Bytes());
      uint32_t cf, cwt;
      while (c.Next(&cf, &cwt)) {
        if (cf == 1 && cwt == 0) {
          e->sequence_id = c.Varint();
        } else {
          c.Skip(cwt);
        }
      }
      ok = ok && c.ok();
    } else if (f == 4 && wt == 2) {
      e->topic = TopicBytes(r.Bytes(), &ok);
    } else {
      r.Skip(wt);
    }
  }
  return ok && r.ok();
}

// ServerEnvelope { EnvelopeMeta meta = 1; ClientEnvelope envelope = 2; },
// ClientEnvelope { GroupMessage group_message = 1; ... }, GroupMessage { bytes data = 1; ... }
bool DecodeEnvelope(std::string_view bytes, EnvelopeView* e) {
  WireReader r(bytes);
  bool ok = true;
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      ok = DecodeMeta(r.Bytes(), e) && ok;
    } else if (f == 2 && wt == 2) {
      WireReader ce(r.Bytes());
      uint32_t cf, cwt;
      while (ce.Next(&cf, &cwt)) {
        if (cf == 1 && cwt == 2) {
          WireReader gm(ce.Bytes());
          uint32_t gf, gwt;
          while (gm.Next(&gf, &gwt)) {
            if (gf == 1 && gwt == 2) {
              e->data = gm.Bytes();
            } else {
              gm.Skip(gwt);
            }
          }
          ok = ok && gm.ok();
        } else {
          ce.Skip(cwt);
        }
      }
      ok = ok && ce.ok();
    } else {
      r.Skip(wt);
    }
  }
  return ok && r.ok();
}

// Messages { repeated ServerEnvelope envelopes = 1; }
bool DecodeMessages(std::string_view bytes, FrameView* out) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 2) {
      out->envelopes.emplace_back();
      if (!DecodeEnvelope(r.Bytes(), &out->envelopes.back())) return false;
    } else {
      r.Skip(wt);
    }
  }
  return r.ok();
}

// Started (static: keepalive_interval_ms = 1, targets = 2; bidi: keepalive_interval_ms = 1) and
// Applied (id = 1, added_targets = 2) share one layout.
bool DecodeTargets(std::string_view bytes, FrameView* out, bool first_is_id) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 0) {
      const uint64_t v = r.Varint();
      if (first_is_id) {
        out->id = v;
      } else {
        out->keepalive_interval_ms = static_cast<uint32_t>(v);
      }
    } else if (f == 2 && wt == 2) {
      out->targets.emplace_back();
      if (!DecodeTarget(r.Bytes(), &out->targets.back())) return false;
    } else {
      r.Skip(wt);
    }
  }
  return r.ok();
}

// Ping / Pong { uint64 nonce = 1; }
bool DecodeNonce(std::string_view bytes, FrameView* out) {
  WireReader r(bytes);
  uint32_t f, wt;
  while (r.Next(&f, &wt)) {
    if (f == 1 && wt == 0) {
      out->id = r.Varint();
    } else {
      r.Skip(wt);
    }
  }
  return r.ok();
}

}  // namespace

bool DecodeFrame(StreamKind kind, std::string_view bytes, FrameView* out) {
  out->kind = FrameView::Kind::kUnknown;
  out->id = 0;
  out->keepalive_interval_ms = 0;
  out->targets.clear();
  out->envelopes.clear();
  WireReader r(bytes);
  uint32_t f, wt;
  int set = 0;
  bool ok = true;
  while (r.Next(&f, &wt)) {
    if (wt != 2) {
      r.Skip(wt);
      continue;
    }
    const std::string_view body = r.Bytes();
    ++set;
    using K = FrameView::Kind;
    if (kind == StreamKind::kStatic) {
      switch (f) {  // SubscribeStaticResponse: started 1, messages 2, keepalive 3
        case 1:
          out->kind = K::kStarted;
          ok = DecodeTargets(body, out, /*first_is_id=*/false);
          break;
        case 2:
          out->kind = K::kMessages;
          ok = DecodeMessages(body, out);
          break;
        case 3:
          out->kind = K::kKeepalive;
          break;
        default:
          --set;
      }
    } else {
      switch (f) {  // SubscribeResponse: started 1, applied 2, messages 3, ping 4, pong 5
        case 1:
          out->kind = K::kStarted;
          ok = DecodeTargets(body, out, /*first_is_id=*/false);
          break;
        case 2:
          out->kind = K::kApplied;
          ok = DecodeTargets(body, out, /*first_is_id=*/true);
          break;
        case 3:
          out->kind = K::kMessages;
          ok = DecodeMessages(body, out);
          break;
        case 4:
          out->kind = K::kPing;
          ok = DecodeNonce(body, out);
          break;
        case 5:
          out->kind = K::kPong;
          ok = DecodeNonce(body, out);
          break;
        default:
          --set;
      }
    }
    if (!ok) return false;
  }
  return r.ok() && set == 1;
}

}  // namespace xb::bench
