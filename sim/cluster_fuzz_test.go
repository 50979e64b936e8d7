package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/huitian/huitian/model"
)

// FuzzClusterFile reads arbitrary bytes as a cluster file (file:PATH, a
// huitian.v1.Cluster in protojson): what is not a valid cluster is an
// error (a *model.ValidationError naming the fields when it is one only by
// its content), never a panic; what reads is sealed and laid out.
func FuzzClusterFile(f *testing.F) {
	f.Add([]byte(`{"id": "lab", "nodes": [
		{"name": "a", "cards": [{"index": 0, "model": "A100"}, {"index": 1, "model": "A100", "nvlinkIsland": "x"}]},
		{"name": "b", "cards": [{"index": 0}]}]}`))
	f.Add([]byte(`{"id": "lab", "nodes": [{"name": "a", "domains": ["s1"], "cards": [{"index": 0}]}],
		"domains": [{"name": "s1", "kind": "DOMAIN_KIND_LEAF_SWITCH"}, {"name": "s2", "parent": "s1"}]}`))
	f.Add([]byte(`{"id": "x", "nodes": [{"name": "", "cards": [{"index": 0}, {"index": 0}]}, {"name": "b", "cards": [], "domains": ["nowhere"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ParseCluster("file:"+path, 0)
		if err != nil {
			var verr *model.ValidationError
			if errors.As(err, &verr) && len(verr.Problems) == 0 {
				t.Fatalf("a validation error with no problem: %v", err)
			}
			return
		}
		lay := c.Layout()
		n := 0
		for _, nd := range c.Nodes {
			n += len(nd.Cards)
		}
		if len(lay.Cards) != n || len(lay.Nodes) != len(c.Nodes) {
			t.Fatalf("laid out %d cards on %d nodes, the cluster has %d on %d", len(lay.Cards), len(lay.Nodes), n, len(c.Nodes))
		}
	})
}

// FuzzClusterSpec reads arbitrary specs that name no file: an error or a
// sealed cluster within the spec's bounds, never a panic.
func FuzzClusterSpec(f *testing.F) {
	for _, s := range []string{"flat", "flat:3", "hgx:2", "hgx:", "flat:-1", "torus:4", "hgx:9999999999999999999", "flat:4194305",
		"hgx:1152921504606846977"} { // 2^60+1 nodes: ×8 cards wrapped to 8 and panicked

		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, spec string, maxCards int) {
		kind, arg, _ := strings.Cut(spec, ":")
		if kind == "file" || kind == "openb" || strings.HasSuffix(spec, ".json") {
			return // names a file: FuzzClusterFile's
		}
		if n, err := strconv.Atoi(arg); err == nil && n > 4096 && n <= MaxSpecCards || maxCards > 4096 {
			return // a valid large machine takes long to build, not to refuse
		}
		c, err := ParseCluster(spec, maxCards)
		if err != nil {
			return
		}
		if len(c.Layout().Cards) == 0 {
			t.Fatalf("%q: a cluster of no cards", spec)
		}
	})
}
