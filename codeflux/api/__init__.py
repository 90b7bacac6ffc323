"""Generated gRPC and protobuf code for the codeflux service contract (api/codeflux/*.proto).

Do not edit: `cmd/codeflux-dev generate` writes this whole tree and `generate-check` keeps it in
sync. May import: grpc, google.protobuf and itself.
"""
