package trace

import (
	"bytes"
	"testing"
)

// The fuzz targets feed arbitrary bytes (plain or gzip) to each reader: it must return
// an error or a trace that keeps every promise of Trace, never panic.

func FuzzSWF(f *testing.F) {
	f.Add([]byte(swfHeader + swfLine(1, 10, 100, 4, 8, 3600, 7) + swfLine(2, 5, -1, -1, -1, -1, -1)))
	f.Add([]byte("1 0.4 -1 99.6 4 12.5 -1 4 600 -1 1 3 1 -1 -1 1 -1 -1 {1,2} q\n; MaxProcs: 2\n"))
	f.Add(gz(f, swfHeader+swfLine(1, 0, 900, 4, 4, 600, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []Options{{}, {Filter: FilterStrong}, {SkipMalformed: true, Estimate: EstimateNone}} {
			tr, err := ReadSWF(bytes.NewReader(data), o)
			if err == nil {
				checkTrace(t, tr, o.Estimate != EstimateNone)
			}
		}
	})
}

func FuzzPhilly(f *testing.F) {
	f.Add([]byte(phillyCSV))
	f.Add(gz(f, phillyCSV))
	f.Add([]byte("job_id,submit_time,num_gpu,duration\n1,-5,0.5,1e3\n2,x,1,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []Options{{}, {SkipMalformed: true, Fractional: FractionalSkip}} {
			tr, err := ReadPhilly(bytes.NewReader(data), o)
			if err == nil {
				checkTrace(t, tr, true)
			}
		}
	})
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte(heliosCSV), false)
	f.Add([]byte(acmeCSV), true)
	f.Add([]byte("job_id,user,gpu_num,node_num,submit_time,start_time,end_time,duration,type\n1,u,2,1,2020-01-01 00:00:00,,,5,x\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, acme bool) {
		read := ReadHelios
		if acme {
			read = ReadAcme
		}
		for _, o := range []Options{{}, {SkipMalformed: true}} {
			tr, err := read(bytes.NewReader(data), o)
			if err == nil {
				checkTrace(t, tr, true)
			}
		}
		cols := &Columns{ID: "job_id", Submit: "submit_time", Cards: "gpu_num", Runtime: "duration", Limit: "limit"}
		if tr, err := ReadCSV(bytes.NewReader(data), Options{Columns: cols}); err == nil {
			checkTrace(t, tr, true)
		}
	})
}

func FuzzOpenB(f *testing.F) {
	f.Add([]byte(openbCSV))
	f.Add(gz(f, openbCSV))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []Options{{}, {SkipMalformed: true, Fractional: FractionalSkip}} {
			tr, err := ReadOpenB(bytes.NewReader(data), o)
			if err == nil {
				checkTrace(t, tr, true)
			}
		}
	})
}

func FuzzNodes(f *testing.F) {
	f.Add([]byte("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\nn1,1,1,0,\n"))
	f.Add([]byte("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,192,7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		nl, err := ReadNodes(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, n := range nl.Nodes {
			if n.Cards <= 0 || n.CPUMilli < 0 || n.MemoryMiB < 0 {
				t.Fatalf("node %+v", n)
			}
		}
	})
}

func FuzzSynthSpec(f *testing.F) {
	for _, s := range []string{"synth:jobs=1000000,seed=1,load=0.9", "jobs=3,cards=8,users=2", "synth:", "synth:jobs=1,jobs=2", "load=1e-300,jobs=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseSynthSpec(s)
		if err != nil {
			return
		}
		back, err := ParseSynthSpec(o.String())
		if err != nil || back != o {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, o, o.String(), back, err)
		}
		if o.Jobs <= 50 { // generate small ones
			tr, err := Synth(o)
			if err != nil {
				t.Fatalf("%+v: %v", o, err)
			}
			checkTrace(t, tr, true)
		}
	})
}
