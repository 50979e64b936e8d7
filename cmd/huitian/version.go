package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// commit is the VCS commit, set by the Makefile (-ldflags -X
// main.commit=…) for builds without Go's VCS stamping (-buildvcs=false,
// or a tree without .git).
var commit string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build's module version and VCS commit (as --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "huitian", version())
			return nil
		},
	}
}

// version says what was built: the module version, the commit (with its
// time, and "modified" for a dirty tree) and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versionLine("(unknown)", nil, "")
	}
	return versionLine(bi.Main.Version, bi.Settings, bi.GoVersion)
}

// versionLine composes version's answer from build information.
func versionLine(mod string, settings []debug.BuildSetting, goVersion string) string {
	if mod == "" {
		mod = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	switch {
	case rev != "":
		c := "commit " + rev
		if at != "" {
			c += " (" + at + ")"
		}
		if modified {
			c += ", modified"
		}
		parts = append(parts, c)
	case commit != "":
		parts = append(parts, "commit "+commit)
	default:
		parts = append(parts, "commit unknown (built without VCS stamping: make build, or go build -buildvcs=true)")
	}
	if goVersion != "" {
		parts = append(parts, goVersion)
	}
	return mod + ", " + strings.Join(parts, ", ")
}
