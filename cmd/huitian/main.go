// Command huitian is the one binary of the huitian backfill planner:
// serve | plan | whatif | bench | topo | kube | jobs | job | store | version.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitWith wraps err so that main exits with code.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "huitian",
		Short:         "Optimization-backed backfill planning for GPU clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("huitian {{.Version}}\n")
	root.AddCommand(
		newVersionCmd(),
		newPlanCmd(),
		newTopoCmd(),
		newWhatifCmd(),
		newServeCmd(),
		newBenchCmd(),
		newStoreCmd(),
		newKubeCmd(),
		newSlurmCmd(),
		newJobsCmd(),
		newJobCmd(),
	)
	return root
}

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "huitian:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(1)
}
