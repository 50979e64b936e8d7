package main

import (
	"os"
	"path/filepath"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// compile parses and links src as buf/validate/validate.proto and returns its
// descriptor without source info.
func compile(t *testing.T, src string) *descriptorpb.FileDescriptorProto {
	t.Helper()
	name := validate.File_buf_validate_validate_proto.Path()
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: src}),
		}),
	}
	files, err := c.Compile(t.Context(), name)
	if err != nil {
		t.Fatalf("compile printed %s: %v", name, err)
	}
	return normalize(t, protodesc.ToFileDescriptorProto(files[0]))
}

// normalize drops source info and re-decodes fdp against the Go registry, so
// that custom options (which the compiler resolves against its own, dynamic
// copy of buf.validate) compare equal to the generated extension types.
func normalize(t *testing.T, fdp *descriptorpb.FileDescriptorProto) *descriptorpb.FileDescriptorProto {
	t.Helper()
	fdp.SourceCodeInfo = nil
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	if err != nil {
		t.Fatalf("marshal descriptor: %v", err)
	}
	out := new(descriptorpb.FileDescriptorProto)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal descriptor: %v", err)
	}
	return out
}

func want(t *testing.T) *descriptorpb.FileDescriptorProto {
	t.Helper()
	return normalize(t, protodesc.ToFileDescriptorProto(validate.File_buf_validate_validate_proto))
}

// TestRoundTrip checks that the printed .proto compiles back to exactly the
// descriptor compiled into the Go module, so that what buf sees when it
// compiles huitian.proto is what protovalidate enforces.
func TestRoundTrip(t *testing.T) {
	src, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := compile(t, string(src)), want(t); !proto.Equal(got, want) {
		t.Errorf("printed validate.proto compiles to a different descriptor than the Go module's")
	}
}

// TestCommittedFileIsCurrent checks the vendored file in proto/ (after buf
// format) against the Go module's descriptor, so a go.mod upgrade without a
// regeneration fails here and not only in scripts/check-generated.sh.
func TestCommittedFileIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", "proto", "buf", "validate", "validate.proto")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read vendored file: %v (run scripts/generate.sh)", err)
	}
	if got, want := compile(t, string(src)), want(t); !proto.Equal(got, want) {
		t.Errorf("%s is stale: it compiles to a different descriptor than the Go module's; run scripts/generate.sh", path)
	}
}
