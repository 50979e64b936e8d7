package server

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// jsonCodec is the service's JSON codec, strict where connect's default is
// lenient. Reading, a field or an enum value the contract does not have is
// an error naming it: connect's default drops both, so that a typo
// ("TOPOLOGY_SAMENODE") silently became the default and a 4-card
// same-node job was split over two nodes. Writing, fields at their default
// are written out ("index": 0, "preemptionProbability": 0), so that a JSON
// reader sees card 0's index and a zero probability rather than nothing.
// Binary protobuf keeps its forward compatibility: unknown fields are kept
// aside, and protovalidate rejects enum numbers the contract does not
// define.
type jsonCodec struct{ name string }

var (
	jsonIn  = protojson.UnmarshalOptions{}
	jsonOut = protojson.MarshalOptions{EmitDefaultValues: true}
)

// jsonCodecs are the codec under both names connect gives JSON.
var jsonCodecs = []jsonCodec{{name: "json"}, {name: "json; charset=utf-8"}}

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("json codec: %T is not a proto.Message", v)
	}
	return jsonOut.Marshal(m)
}

func (jsonCodec) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("json codec: %T is not a proto.Message", v)
	}
	if len(b) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	if err := jsonIn.Unmarshal(b, m); err != nil {
		return fmt.Errorf("the request does not match the contract (unknown field and enum names are rejected): %w", err)
	}
	return nil
}
