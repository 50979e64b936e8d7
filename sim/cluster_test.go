package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/huitian/huitian/model"
)

func TestParseCluster(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"id": "lab", "nodes": [
		{"name": "a", "cards": [{"index": 0, "model": "A100"}, {"index": 1, "model": "A100", "nvlinkIsland": "x"}]},
		{"name": "b", "cards": [{"index": 0}]}]}`)
	openb := write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,8,V100M32\nn2,32000,1000,0,\n")
	for _, tc := range []struct {
		spec     string
		maxCards int
		nodes    int
		cards    int
		switches int
	}{
		{"flat", 100, 100, 100, 0},
		{"flat:3", 0, 3, 3, 0},
		{"hgx:40", 0, 40, 320, 2},
		{"hgx:32", 0, 32, 256, 1},
		{"file:" + good, 0, 2, 3, 0},
		{good, 0, 2, 3, 0},
		{"openb:" + openb, 0, 2, 10, 0},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			c, err := ParseCluster(tc.spec, tc.maxCards)
			if err != nil {
				t.Fatal(err)
			}
			lay := c.Layout()
			if len(lay.Nodes) != tc.nodes || len(lay.Cards) != tc.cards || len(lay.Switches) != tc.switches {
				t.Errorf("%d nodes, %d cards, %d leaf switches; want %d, %d, %d",
					len(lay.Nodes), len(lay.Cards), len(lay.Switches), tc.nodes, tc.cards, tc.switches)
			}
		})
	}
	c, _ := ParseCluster("hgx:2", 0)
	if l := c.Layout(); len(l.Islands) != 2 || l.Nodes[1].Name != "hgx1" {
		t.Errorf("hgx:2: %d islands, second node %q; want one island per node, hgx1", len(l.Islands), l.Nodes[1].Name)
	}
	if c, _ := ParseCluster("flat:12", 0); c.Nodes[2].Name != "p02" {
		t.Errorf("flat:12 third node %q, want p02", c.Nodes[2].Name)
	}
}

func TestParseClusterErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id": "lab", "nodes": [
		{"name": "", "cards": [{"index": 0}, {"index": 0}]},
		{"name": "b", "cards": [], "domains": ["nowhere"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"flat", "no machine size"},
		{"flat:0", "not a positive count"},
		{"flat:x", "not a positive count"},
		{"hgx:", "not a positive count"},
		{"torus:4", "want flat"},
		{"openb:", "want openb:FILE"},
		{"file:" + filepath.Join(dir, "missing.json"), "no such file"},
	} {
		if _, err := ParseCluster(tc.spec, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCluster(%q): error %v, want one containing %q", tc.spec, err, tc.want)
		}
	}
	_, err := ParseCluster(bad, 0)
	var verr *model.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v, want a *model.ValidationError", err)
	}
	var fields []string
	for _, p := range verr.Problems {
		fields = append(fields, p.Field)
	}
	got := strings.Join(fields, " ")
	for _, want := range []string{"cluster.nodes[0].name", "cluster.nodes[1].cards", "cluster.nodes[0].cards[1].index", "cluster.nodes[1].domains[0]"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems at %q: missing %s", got, want)
		}
	}
}
