#!/usr/bin/env bash
# Regenerates huitian's API code, offline and idempotently:
#   1. proto/buf/validate/validate.proto from the protovalidate Go module
#      (the Buf Schema Registry is not reachable, so it is vendored);
#   2. buf format -w over proto/ (the vendored file is printed by protoprint;
#      this makes it, and the hand-written .proto files, canonical);
#   3. buf lint over proto/;
#   4. buf generate: proto/huitian/v1/huitian.pb.go and
#      proto/huitian/v1/huitianv1connect/huitian.connect.go.
# buf and the plugins are the versions pinned by go.mod's tool directives.
set -euo pipefail

cd "$(dirname "$0")/.."

echo "generate: proto/buf/validate/validate.proto" >&2
go run ./internal/tools/validateproto -out proto

echo "generate: buf format" >&2
go tool buf format -w

echo "generate: buf lint" >&2
go tool buf lint

echo "generate: buf generate" >&2
go tool buf generate
