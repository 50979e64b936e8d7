package wire

import (
	"strconv"
	"strings"
	"testing"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestDomainCyclesAndDepth: the one-pass depth walk (issue 12 item 3: the
// pairwise walk was quadratic in a chain's depth) still names every domain
// on a parent cycle, and no domain that merely leads into one, and names
// the first level past the depth limit. Before the fix, a chain of any
// depth was accepted.
func TestDomainCyclesAndDepth(t *testing.T) {
	req := example(t)
	sw := pb.DomainKind_DOMAIN_KIND_SWITCH
	req.Cluster.Domains = append(req.Cluster.Domains,
		&pb.Domain{Id: "cyc-a", Kind: sw, Parent: "cyc-b"},
		&pb.Domain{Id: "cyc-b", Kind: sw, Parent: "cyc-a"},
		&pb.Domain{Id: "into-cycle", Kind: sw, Parent: "cyc-a"},
		&pb.Domain{Id: "self", Kind: sw, Parent: "self"},
	)
	base := len(req.Cluster.Domains)
	for i := range 20 {
		d := &pb.Domain{Id: "deep-" + string(rune('a'+i)), Kind: sw}
		if i > 0 {
			d.Parent = "deep-" + string(rune('a'+i-1))
		}
		req.Cluster.Domains = append(req.Cluster.Domains, d)
	}
	_, err := Snapshot(req)
	if err == nil {
		t.Fatal("want problems")
	}
	got := err.Error()
	for _, w := range []string{
		`domains[` + strconv.Itoa(base-4) + `].parent: domain "cyc-a" is its own ancestor`,
		`domains[` + strconv.Itoa(base-3) + `].parent: domain "cyc-b" is its own ancestor`,
		`domains[` + strconv.Itoa(base-1) + `].parent: domain "self" is its own ancestor`,
		`domains[` + strconv.Itoa(base+16) + `].parent: domain "deep-q" is 17 levels deep`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	for _, no := range []string{`"into-cycle" is its own ancestor`, `"deep-r" is 18 levels deep`} {
		if strings.Contains(got, no) {
			t.Errorf("unexpected %q in:\n%s", no, got)
		}
	}
}
