// Benchmark peer: a gRPC C++ (Debian's 1.51) callback-API server serving the same two unary
// methods as xmtp-backend, for side-by-side h2load runs (bench/unary.sh).
//
//   server 127.0.0.1:PORT CONFIG_RESPONSE_FILE
//
// CONFIG_RESPONSE_FILE holds the serialized xmtp.backend.v1.GetConfigurationResponse that our
// server returned; GetConfiguration answers with that message, so both servers put the same bytes
// on the wire. Health/Check answers SERVING for "" and NOT_FOUND for any other service name.
//
// Generated code (backend.pb.h, backend.grpc.pb.h, health.*) is produced by bench/unary.sh into a
// temporary build directory and never committed.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace {

namespace backend = ::xmtp::backend::v1;
namespace health = ::grpc::health::v1;

class HealthImpl final : public health::Health::CallbackService {
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx,
                                  const health::HealthCheckRequest* request,
                                  health::HealthCheckResponse* response) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (request->service().empty()) {
      response->set_status(health::HealthCheckResponse::SERVING);
      reactor->Finish(grpc::Status::OK);
    } else {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service"));
    }
    return reactor;
  }
};

class ConfigurationImpl final : public backend::ConfigurationService::CallbackService {
 public:
  explicit ConfigurationImpl(backend::GetConfigurationResponse config)
      : config_(std::move(config)) {}

  grpc::ServerUnaryReactor* GetConfiguration(grpc::CallbackServerContext* ctx,
                                             const backend::GetConfigurationRequest* /*request*/,
                                             backend::GetConfigurationResponse* response) override {
    // A copy per call, as a handler that builds its answer from shared state would do.
    *response = config_;
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const backend::GetConfigurationResponse config_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST:PORT CONFIG_RESPONSE_FILE\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  backend::GetConfigurationResponse config;
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  if (!config.ParseFromString(bytes)) {
    std::fprintf(stderr, "%s is not a GetConfigurationResponse\n", argv[2]);
    return 2;
  }

  HealthImpl health_service;
  ConfigurationImpl configuration_service(std::move(config));
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(argv[1], grpc::InsecureServerCredentials(), &bound_port);
  builder.RegisterService(&health_service);
  builder.RegisterService(&configuration_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::fprintf(stderr, "cannot listen on %s\n", argv[1]);
    return 1;
  }
  std::fprintf(stderr, "grpc_cpp peer listening on %s\n", argv[1]);
  server->Wait();
  return 0;
}
