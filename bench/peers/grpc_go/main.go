// Benchmark peer: a grpc-go (Debian's 1.33) server serving the same two unary methods as
// xmtp-backend, for side-by-side h2load runs (bench/unary.sh). Built in GOPATH mode against
// /usr/share/gocode; bench/unary.sh generates the protobuf packages it imports (xbpeer/pb/...)
// into a temporary GOPATH with protoc-gen-go and protoc-gen-go-grpc. Nothing generated is
// committed.
//
//	grpc_go_peer 127.0.0.1:PORT CONFIG_RESPONSE_FILE
//
// CONFIG_RESPONSE_FILE holds the serialized xmtp.backend.v1.GetConfigurationResponse that our
// server returned; GetConfiguration answers with that message. Health/Check answers SERVING for
// "" and NOT_FOUND for any other service name. Run with GOMAXPROCS=1 for one worker.
package main

import (
	"context"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"runtime"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	healthpb "xbpeer/pb/grpc/health/v1"
	backendpb "xbpeer/pb/xmtp/backend/v1"
)

// Debian ships grpc-go 1.33 beside github.com/golang/protobuf 1.3, whose codec cannot handle the
// APIv2 messages that protoc-gen-go 1.28 generates. Current grpc-go releases marshal with APIv2
// (google.golang.org/protobuf/proto) in their own codec; this one does the same, under the name
// "proto" so it replaces the built-in codec.
type apiV2Codec struct{}

func (apiV2Codec) Marshal(v interface{}) ([]byte, error) {
	return proto.Marshal(v.(proto.Message))
}

func (apiV2Codec) Unmarshal(data []byte, v interface{}) error {
	return proto.Unmarshal(data, v.(proto.Message))
}

func (apiV2Codec) Name() string { return "proto" }

type healthServer struct {
	healthpb.UnimplementedHealthServer
}

func (healthServer) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if req.GetService() != "" {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

type configurationServer struct {
	backendpb.UnimplementedConfigurationServiceServer
	config *backendpb.GetConfigurationResponse
}

func (s *configurationServer) GetConfiguration(context.Context, *backendpb.GetConfigurationRequest) (*backendpb.GetConfigurationResponse, error) {
	// The shared message is only read (marshalled) by grpc-go, never modified.
	return s.config, nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: %s HOST:PORT CONFIG_RESPONSE_FILE\n", os.Args[0])
		os.Exit(2)
	}
	bytes, err := ioutil.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot read %s: %v\n", os.Args[2], err)
		os.Exit(2)
	}
	config := &backendpb.GetConfigurationResponse{}
	if err := proto.Unmarshal(bytes, config); err != nil {
		fmt.Fprintf(os.Stderr, "%s is not a GetConfigurationResponse: %v\n", os.Args[2], err)
		os.Exit(2)
	}
	encoding.RegisterCodec(apiV2Codec{})
	lis, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot listen on %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	healthpb.RegisterHealthServer(server, healthServer{})
	backendpb.RegisterConfigurationServiceServer(server, &configurationServer{config: config})
	fmt.Fprintf(os.Stderr, "grpc_go peer listening on %s (GOMAXPROCS=%d)\n", os.Args[1], runtime.GOMAXPROCS(0))
	if err := server.Serve(lis); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		os.Exit(1)
	}
}
