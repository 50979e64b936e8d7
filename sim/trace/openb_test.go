package trace

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
)

const openbCSV = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
openb-pod-0002,12000,24576,8,1000,V100M16|V100M32|V100M32,BE,Succeeded,100,5000,160
openb-pod-0003,6000,12288,0,0,,BE,Running,200,12902960,200
openb-pod-0004,6000,12288,1,1000,,BE,Pending,300,12902960,
openb-pod-0005,6000,12288,2,1000,T4,LS,Failed,400,400,400
`

func TestReadOpenB(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    []got
		dropped map[string]int
	}{
		{
			name: "a shared GPU counts as one card by default",
			want: []got{
				{"openb-pod-0000", 0, 12537496, 18835200, 1, 0, model.TopologyAny, "", "", ""},
				{"openb-pod-0002", 100, 4840, 10800, 8, 8, model.TopologySameNode, "", "", "V100M16|V100M32"},
				{"openb-pod-0001", 427061, 12475899, 18748800, 1, 0, model.TopologyAny, "", "", ""},
			},
			dropped: map[string]int{DropNoCards: 1, DropNotStarted: 1, DropRuntime: 1},
		},
		{
			name: "Fractional skip drops shared GPUs",
			opts: Options{Fractional: FractionalSkip, Estimate: EstimateExact},
			want: []got{
				{"openb-pod-0000", 0, 12537496, 12537496, 1, 0, model.TopologyAny, "", "", ""},
				{"openb-pod-0002", 100, 4840, 4840, 8, 8, model.TopologySameNode, "", "", "V100M16|V100M32"},
			},
			dropped: map[string]int{DropNoCards: 1, DropNotStarted: 1, DropRuntime: 1, DropFractional: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ReadOpenB(strings.NewReader(openbCSV), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, true)
			if diff := cmp.Diff(tt.want, gotJobs(tr)); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.dropped, tr.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadOpenBErrors(t *testing.T) {
	for _, tt := range []struct{ name, in string }{
		{"a missing column", "name,num_gpu\n"},
		{"a bad time", "name,num_gpu,creation_time,deletion_time,scheduled_time\np,1,0,later,0\n"},
		{"negative GPUs", "name,num_gpu,creation_time,deletion_time,scheduled_time\np,-1,0,5,0\n"},
	} {
		if _, err := ReadOpenB(strings.NewReader(tt.in), Options{}); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestReadNodes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Node
		drop int
	}{
		{
			name: "openb node list",
			in:   "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\nopenb-node-0001,32000,262144,0,\n",
			want: []Node{{Name: "openb-node-0000", Cards: 2, Model: "P100", CPUMilli: 64000, MemoryMiB: 262144}},
			drop: 1,
		},
		{
			name: "spot node list",
			in:   "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,192,7\n",
			want: []Node{{Name: "7", Cards: 1, Model: "A10", CPUMilli: 192000}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nl, err := ReadNodes(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, nl.Nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if nl.Dropped[DropNoCards] != tt.drop {
				t.Errorf("dropped %v, want %d without cards", nl.Dropped, tt.drop)
			}
		})
	}
	if _, err := ReadNodes(strings.NewReader("name,cpus\na,4\n")); err == nil {
		t.Error("a list without GPU counts: no error")
	}
}
