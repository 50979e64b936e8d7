package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// profiling is the --cpuprofile and --memprofile flags of the commands
// that replay or plan at length (whatif, bench).
type profiling struct {
	cpu, mem string
}

func (p *profiling) flags(fl *pflag.FlagSet) {
	fl.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the whole run here (go tool pprof)")
	fl.StringVar(&p.mem, "memprofile", "", "write an allocation profile of the whole run here, at its end (go tool pprof -sample_index=alloc_space)")
}

// start begins the CPU profile, if asked, and returns the function that
// ends it and writes the allocation profile; the caller defers it and
// returns its error when it has none of its own. A file that cannot be
// made is a bad flag (status 2).
func (p *profiling) start() (stop func() error, err error) {
	var cpu *os.File
	if p.cpu != "" {
		if cpu, err = os.Create(p.cpu); err != nil {
			return nil, exitWith(2, fmt.Errorf("--cpuprofile: %w", err))
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, exitWith(2, fmt.Errorf("--cpuprofile: %w", err))
		}
	}
	var mem *os.File
	if p.mem != "" {
		if mem, err = os.Create(p.mem); err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, exitWith(2, fmt.Errorf("--memprofile: %w", err))
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
			}
		}
		if mem != nil {
			runtime.GC() // the last allocations into the profile
			if err := pprof.Lookup("allocs").WriteTo(mem, 0); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
			if err := mem.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
		}
		return errors.Join(errs...)
	}, nil
}
