// Benchmark peer: a grpc-go (Debian's 1.33) server for the stream benchmarks (bench/streams.sh).
// It serves xmtp.backend.v1 Publish and SubscribeStatic from memory, so the same load client
// (bench/loadgen, modes subscribe-latency, deliver, idle-streams) can drive it and our server in
// one run. It is a ceiling for the transport, not a backend: nothing is validated beyond what
// routing needs, nothing is durable, and sequence ids come from one in-process counter.
//
//	grpc_go_stream_peer -listen 127.0.0.1:PORT [-batch 64] [-queue 4096]
//
// Publish: each GroupMessage is routed to topic 0x00 + the MLS group_id read from its data
// (RFC 9420 §6: version, wire_format, group_id<V>); other payload kinds fail INVALID_ARGUMENT.
// The ServerEnvelope (meta: sequence id, server_ns, SHA-256 of the ClientEnvelope, topic, a
// 90-day expiry; envelope: the ClientEnvelope) is encoded once, stored, and appended to the
// queue of every stream registered on the topic.
//
// SubscribeStatic: under the store lock, each requested topic's stored envelopes above its
// cursor are taken (a slice, no copy) and the stream is registered for live ones; then Started
// (one CatchupTarget per topic, request order), then the history, then live envelopes. Messages
// frames are assembled from the pre-encoded envelopes by concatenation, at most -batch envelopes
// (and 2 MiB) per frame, and sent as fast as HTTP/2 flow control lets grpc-go write them. A stream
// whose live queue (-queue envelopes) overflows ends RESOURCE_EXHAUSTED, as ours does. No
// keepalive frames are sent. Run with GOMAXPROCS=1 for one worker.
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	backendpb "xbpeer/pb/xmtp/backend/v1"
)

const (
	maxFrameBytes   = 2 << 20 // API 3.8: frames target at most 2 MiB
	retentionNs     = 90 * 24 * 3600 * int64(time.Second)
	maxStaticTopics = 10000
)

// rawFrame is an already-encoded response message; the codec writes its bytes as they are.
type rawFrame []byte

// Debian pairs grpc-go 1.33 with github.com/golang/protobuf 1.3, whose codec cannot marshal the
// APIv2 messages of protoc-gen-go 1.28 (see bench/peers/grpc_go/main.go); this codec marshals with
// APIv2 and passes pre-encoded frames through untouched.
type codec struct{}

func (codec) Marshal(v interface{}) ([]byte, error) {
	if f, ok := v.(*rawFrame); ok {
		return *f, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (codec) Unmarshal(data []byte, v interface{}) error {
	return proto.Unmarshal(data, v.(proto.Message))
}

func (codec) Name() string { return "proto" }

type entry struct {
	seq     uint64
	encoded []byte // a serialized ServerEnvelope
}

// subscriber is one registration: a stream's live queue for one topic.
type subscriber struct {
	live     chan []byte
	overflow chan struct{} // closed once when live is full
	once     sync.Once
}

type topicState struct {
	log  []entry
	subs map[*subscriber]struct{}
}

type store struct {
	mu     sync.Mutex
	seq    uint64
	topics map[string]*topicState
}

func (s *store) topic(t string) *topicState {
	ts := s.topics[t]
	if ts == nil {
		ts = &topicState{subs: map[*subscriber]struct{}{}}
		s.topics[t] = ts
	}
	return ts
}

// groupTopic reads group_id<V> after version and wire_format (RFC 9420 §2.1.2 vectors).
func groupTopic(data []byte) ([]byte, bool) {
	if len(data) < 5 {
		return nil, false
	}
	p := data[4:]
	var n, hdr int
	switch p[0] >> 6 {
	case 0:
		n, hdr = int(p[0]&0x3f), 1
	case 1:
		if len(p) < 2 {
			return nil, false
		}
		n, hdr = int(p[0]&0x3f)<<8|int(p[1]), 2
	default:
		return nil, false
	}
	if n != 16 || len(p) < hdr+n {
		return nil, false
	}
	return append([]byte{0}, p[hdr:hdr+n]...), true
}

type server struct {
	backendpb.UnimplementedPublishServiceServer
	backendpb.UnimplementedSubscriptionServiceServer
	st    *store
	batch int
	queue int
}

func (s *server) Publish(_ context.Context, req *backendpb.PublishRequest) (*backendpb.PublishResponse, error) {
	type prepared struct {
		topic    []byte
		hash     [32]byte
		envelope *backendpb.ClientEnvelope
	}
	items := make([]prepared, 0, len(req.GetEnvelopes()))
	for i, e := range req.GetEnvelopes() {
		gm := e.GetGroupMessage()
		if gm == nil {
			return nil, status.Errorf(codes.InvalidArgument, "envelope %d: the peer routes group messages only", i)
		}
		topic, ok := groupTopic(gm.GetData())
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "envelope %d: no 16-byte MLS group id", i)
		}
		b, err := proto.Marshal(e)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "marshal: %v", err)
		}
		items = append(items, prepared{topic: topic, hash: sha256.Sum256(b), envelope: e})
	}
	resp := &backendpb.PublishResponse{EnvelopeMetas: make([]*backendpb.EnvelopeMeta, 0, len(items))}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	now := uint64(time.Now().UnixNano())
	for _, it := range items {
		s.st.seq++
		meta := &backendpb.EnvelopeMeta{
			Cursor:      &backendpb.Cursor{SequenceId: s.st.seq},
			ServerNs:    now,
			MessageHash: &backendpb.MessageHash{Hash: &backendpb.MessageHash_Sha256{Sha256: it.hash[:]}},
			Topic:       &backendpb.Topic{Topic: it.topic},
			ExpiryNs:    now + uint64(retentionNs),
		}
		encoded, err := proto.Marshal(&backendpb.ServerEnvelope{Meta: meta, Envelope: it.envelope})
		if err != nil {
			return nil, status.Errorf(codes.Internal, "marshal: %v", err)
		}
		ts := s.st.topic(string(it.topic))
		ts.log = append(ts.log, entry{seq: s.st.seq, encoded: encoded})
		for sub := range ts.subs {
			select {
			case sub.live <- encoded:
			default:
				sub.once.Do(func() { close(sub.overflow) })
			}
		}
		resp.EnvelopeMetas = append(resp.EnvelopeMetas, meta)
	}
	return resp, nil
}

// frame appends envelopes to a SubscribeStaticResponse{messages{envelopes...}} encoding.
type frame struct {
	body []byte // Messages body: repeated field 1
	n    int
}

func (f *frame) fits(e []byte) bool {
	return f.n == 0 || len(f.body)+len(e)+16 <= maxFrameBytes
}

func (f *frame) add(e []byte) {
	f.body = protowire.AppendTag(f.body, 1, protowire.BytesType)
	f.body = protowire.AppendBytes(f.body, e)
	f.n++
}

func (f *frame) encode() *rawFrame {
	out := make([]byte, 0, len(f.body)+8)
	out = protowire.AppendTag(out, 2, protowire.BytesType) // SubscribeStaticResponse.messages
	out = protowire.AppendBytes(out, f.body)
	r := rawFrame(out)
	f.body = f.body[:0]
	f.n = 0
	return &r
}

func (s *server) SubscribeStatic(req *backendpb.SubscribeStaticRequest, stream backendpb.SubscriptionService_SubscribeStaticServer) error {
	topics := req.GetTopics()
	if len(topics) == 0 || len(topics) > maxStaticTopics {
		return status.Error(codes.InvalidArgument, "topics: 1 to 10000")
	}
	seen := map[string]bool{}
	for _, q := range topics {
		t := string(q.GetTopic().GetTopic())
		if seen[t] {
			return status.Error(codes.InvalidArgument, "a topic appears twice")
		}
		seen[t] = true
	}
	sub := &subscriber{live: make(chan []byte, s.queue), overflow: make(chan struct{})}
	started := &backendpb.SubscribeStaticResponse_Started{}
	var history [][]entry
	s.st.mu.Lock()
	for _, q := range topics {
		ts := s.st.topic(string(q.GetTopic().GetTopic()))
		cursor := q.GetCursor().GetSequenceId()
		var through uint64
		if n := len(ts.log); n > 0 {
			through = ts.log[n-1].seq
		}
		// The log is in id order: the first entry above the cursor, by binary search.
		lo, hi := 0, len(ts.log)
		for lo < hi {
			mid := (lo + hi) / 2
			if ts.log[mid].seq <= cursor {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		history = append(history, ts.log[lo:len(ts.log):len(ts.log)])
		ts.subs[sub] = struct{}{}
		started.Targets = append(started.Targets, &backendpb.CatchupTarget{Topic: q.GetTopic(), ThroughSequenceId: through})
	}
	s.st.mu.Unlock()
	defer func() {
		s.st.mu.Lock()
		for _, q := range topics {
			delete(s.st.topic(string(q.GetTopic().GetTopic())).subs, sub)
		}
		s.st.mu.Unlock()
	}()

	if err := stream.Send(&backendpb.SubscribeStaticResponse{
		Response: &backendpb.SubscribeStaticResponse_Started_{Started: started}}); err != nil {
		return err
	}
	var f frame
	flush := func() error {
		if f.n == 0 {
			return nil
		}
		return stream.SendMsg(f.encode())
	}
	// History, topic after topic (API-261 fairness does not matter to one-topic streams).
	for _, h := range history {
		for _, e := range h {
			if f.n == s.batch || !f.fits(e.encoded) {
				if err := flush(); err != nil {
					return err
				}
			}
			f.add(e.encoded)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-sub.overflow:
			return status.Error(codes.ResourceExhausted, "live queue full")
		case e := <-sub.live:
			f.add(e)
		drain:
			for f.n < s.batch {
				select {
				case e := <-sub.live:
					if !f.fits(e) {
						if err := flush(); err != nil {
							return err
						}
					}
					f.add(e)
				default:
					break drain
				}
			}
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	batch := flag.Int("batch", 64, "envelopes per Messages frame, at most")
	queue := flag.Int("queue", 4096, "live envelopes queued per stream before it fails RESOURCE_EXHAUSTED")
	flag.Parse()
	if *batch < 1 || *queue < 1 {
		fmt.Fprintln(os.Stderr, "-batch and -queue must be positive")
		os.Exit(2)
	}
	encoding.RegisterCodec(codec{})
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot listen on %s: %v\n", *listen, err)
		os.Exit(1)
	}
	s := &server{st: &store{topics: map[string]*topicState{}}, batch: *batch, queue: *queue}
	g := grpc.NewServer()
	backendpb.RegisterPublishServiceServer(g, s)
	backendpb.RegisterSubscriptionServiceServer(g, s)
	fmt.Fprintf(os.Stderr, "grpc_go_stream peer listening on %s (GOMAXPROCS=%d, batch %d, queue %d)\n",
		*listen, runtime.GOMAXPROCS(0), *batch, *queue)
	if err := g.Serve(lis); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		os.Exit(1)
	}
}
