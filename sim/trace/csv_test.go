package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
)

// got is the comparable part of a job.
type got struct {
	ID                     string
	Submit, Runtime, Limit int64
	Cards, PerNode         int
	Topo                   model.Topology
	User, Class, Model     string
}

func gotJobs(tr *Trace) []got {
	var out []got
	for _, j := range tr.Jobs {
		s := j.Spec
		out = append(out, got{j.ID, j.Submit, j.Runtime, j.Limit, s.Cards, s.CardsPerNode, s.Topology, s.User, s.Class, s.CardModel})
	}
	return out
}

const phillyCSV = `job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,iteration
0,0,1282877,vgg16,771220,256,1,976570,976570,1282877
1,219316,26446831,vgg16,2065619,64,4,1792395,1792395,26446831
2,251674,118680,vgg16,281132,64,1,0,0,118680
3,251699,83535,bert,279709,128,0,23367,23367,83535
`

func TestReadPhilly(t *testing.T) {
	tr, err := ReadPhilly(strings.NewReader(phillyCSV), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	want := []got{
		{"0", 0, 976570, 1468800, 1, 0, model.TopologyAny, "", "training", ""},
		{"1", 219316, 1792395, 2764800, 4, 4, model.TopologySameNode, "", "training", ""},
	}
	if diff := cmp.Diff(want, gotJobs(tr)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{DropRuntime: 1, DropNoCards: 1}, tr.Dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if len(tr.Notes) == 0 || !strings.Contains(strings.Join(tr.Notes, "\n"), "no user estimate") {
		t.Errorf("notes %q do not say how Limit was set", tr.Notes)
	}
}

const heliosCSV = `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0
1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0
1425513,uzqls,vcpDC,16,1,2,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,,0
1425514,uzqls,vcpDC,0,8,1,COMPLETED,2020-06-09 18:41:29,2020-06-09 18:41:29,2020-06-09 18:42:00,31,0
1425515,uzqls,vcpDC,2,8,1,COMPLETED,2020-06-09 18:41:30,,,,0
`

func TestReadHelios(t *testing.T) {
	tr, err := ReadHelios(strings.NewReader(heliosCSV), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	want := []got{
		{"1425511", 0, 36848, 57600, 1, 0, model.TopologyAny, "uXBbc", "", ""},
		{"1425512", 26, 249, 600, 4, 4, model.TopologySameNode, "uVMrF", "", ""},
		// no duration: end − start; 2 nodes → 8 per node
		{"1425513", 27, 675233, 1036800, 16, 8, model.TopologyAny, "uzqls", "", ""},
	}
	if diff := cmp.Diff(want, gotJobs(tr)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{DropNoCards: 1, DropNotStarted: 1}, tr.Dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(tr.Notes, "\n"), "epoch (submit 0) is 2020-06-09T18:41:01Z") {
		t.Errorf("notes %q do not give the epoch", tr.Notes)
	}
}

const acmeCSV = `job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0
5778469,u5907,1,8,128,Pretrain,COMPLETED,2023-03-01 00:23:58+08:00,2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0
5778470,u5908,8,64,960,SFT,COMPLETED,2023-02-28 16:30:00+00:00,2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0
`

func TestReadAcme(t *testing.T) {
	tr, err := ReadAcme(strings.NewReader(acmeCSV), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	// 2023-02-28 16:30:00Z is 00:30 +08:00: the third job is submitted after the first.
	want := []got{
		{"5778432", 0, 117, 300, 8, 8, model.TopologySameNode, "u5907", "other", ""},
		{"5778469", 336, 2693, 5400, 8, 8, model.TopologySameNode, "u5907", "pretrain", ""},
		{"5778470", 698, 2693, 5400, 64, 8, model.TopologyAny, "u5908", "sft", ""},
	}
	if diff := cmp.Diff(want, gotJobs(tr)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

func TestReadCSVColumns(t *testing.T) {
	const in = "ID;Who;GPUs;Model;Queued;Ran;Asked\n" +
		"a;alice;0.5;A100|H100|A100;100;60;01:00:00\n" +
		"b;bob;2;;160;10;1-00:00:00\n" +
		"c;carol;1;;130;30;UNLIMITED\n"
	cols := &Columns{ID: "id", User: "who", Cards: "gpus", CardModel: "model", Submit: "queued", Runtime: "ran", Limit: "asked", DefaultClass: "search"}
	tr, err := ReadCSV(strings.NewReader(strings.ReplaceAll(in, ";", ",")), Options{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	want := []got{
		{"a", 0, 60, 3600, 1, 0, model.TopologyAny, "alice", "search", "A100|H100"},
		{"c", 30, 30, 60, 1, 0, model.TopologyAny, "carol", "search", ""},
		{"b", 60, 10, 86400, 2, 2, model.TopologySameNode, "bob", "search", ""},
	}
	if diff := cmp.Diff(want, gotJobs(tr)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	tr, err = ReadCSV(strings.NewReader(strings.ReplaceAll(in, ";", ",")), Options{Columns: cols, Fractional: FractionalSkip})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Dropped[DropFractional] != 1 || len(tr.Jobs) != 2 {
		t.Errorf("Fractional skip: dropped %v, %d jobs", tr.Dropped, len(tr.Jobs))
	}
}

func TestReadCSVErrors(t *testing.T) {
	cols := &Columns{ID: "id", Cards: "gpus", Submit: "submit", Runtime: "run"}
	tests := []struct {
		name  string
		in    string
		cols  *Columns
		line  int
		field string
	}{
		{"a missing column is named", "id,gpus,submit\n", cols, 1, "header"},
		{"a bad submit names line and column", "id,gpus,submit,run\na,1,0,5\nb,1,yesterday,5\n", cols, 3, "column submit"},
		{"bad cards name line and column", "id,gpus,submit,run\na,many,0,5\n", cols, 2, "column gpus"},
		{"a bad quote names its line", "id,gpus,submit,run\na,1,0,5\n\"b,1,0,5\n", cols, 3, "csv syntax at byte 10"},
		{"empty input", "", cols, 1, "header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tt.in), Options{Columns: tt.cols})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || pe.Field != tt.field {
				t.Errorf("line %d field %q, want line %d field %q (%v)", pe.Line, pe.Field, tt.line, tt.field, err)
			}
		})
	}
	if _, err := ReadCSV(strings.NewReader("a\n"), Options{}); err == nil {
		t.Error("ReadCSV without Columns: no error")
	}
	if _, err := ReadCSV(strings.NewReader("id,gpus,submit,run\na,1,0,5\nb,1,x,5\n"), Options{Columns: cols, SkipMalformed: true}); err != nil {
		t.Errorf("SkipMalformed: %v", err)
	}
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"3600", 3600, true}, {"90.4", 90, true}, {"01:30", 90, true}, {"02:00:30", 7230, true},
		{"1-00:00:00", 86400, true}, {"2-12", 2*86400 + 12*3600, true}, {"1-01:30", 86400 + 5400, true},
		{"4h30m", 16200, true}, {"UNLIMITED", 0, true},
		{"soon", 0, false}, {"1:2:3:4", 0, false}, {"-5:00", 0, false}, {"x-01:00:00", 0, false},
	}
	for _, tt := range tests {
		got, err := parseLimit(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseLimit(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestShape(t *testing.T) {
	tests := []struct {
		name         string
		cards, nodes int
		wantPer      int
		wantTopo     model.Topology
		wantComm     model.Comm
	}{
		{"one card needs nothing", 1, 0, 0, model.TopologyAny, model.CommNone},
		{"a small gang shares a node", 4, 0, 4, model.TopologySameNode, model.CommHigh},
		{"a one-node job shares it", 8, 1, 8, model.TopologySameNode, model.CommHigh},
		{"a multi-node job spreads evenly", 32, 4, 8, model.TopologyAny, model.CommHigh},
		{"an uneven multi-node job has no per-node count", 10, 3, 0, model.TopologyAny, model.CommHigh},
		{"a big gang without nodes fills nodes", 16, 0, 8, model.TopologyAny, model.CommHigh},
		{"an odd big gang without nodes", 12, 0, 0, model.TopologyAny, model.CommHigh},
	}
	for _, tt := range tests {
		per, topo, comm := shape(tt.cards, tt.nodes, 8)
		if per != tt.wantPer || topo != tt.wantTopo || comm != tt.wantComm {
			t.Errorf("%s: shape(%d, %d) = %d, %v, %v", tt.name, tt.cards, tt.nodes, per, topo, comm)
		}
	}
}
